"""Block timing with an injected fake clock (deterministic, no sleeping)."""

import pytest

from eb_torchperf.probe import timing


class FakeClock:
    """A clock that advances by `cost_s` per call of the timed function."""

    def __init__(self, cost_s):
        self.now = 0.0
        self.cost_s = cost_s
        self.calls = 0

    def timer(self):
        return self.now

    def fn(self):
        self.calls += 1
        self.now += self.cost_s


def test_time_calls_floor():
    clock = FakeClock(0.0)
    assert timing.time_calls(clock.fn, 5, clock.timer) == timing.MIN_INTERVAL_S
    assert clock.calls == 5


def test_calibrate_reaches_min_sample():
    clock = FakeClock(1e-4)
    number, per_call = timing.calibrate(clock.fn, 0.002, clock.timer)
    assert number * 1e-4 >= 0.002
    assert number < 2 * 0.002 / 1e-4 * 1.2
    assert per_call == pytest.approx(1e-4)


def test_calibrate_slow_call_is_one():
    clock = FakeClock(0.3)
    assert timing.calibrate(clock.fn, 0.002, clock.timer) == (1, 0.3)
    assert clock.calls == 2  # one discarded first call, one calibration call


def test_calibrate_stops_after_a_first_call_of_half_a_second():
    """A whole model at 1 % of the wheel: its first call is the calibration."""
    clock = FakeClock(timing.SLOW_FIRST_CALL_S)
    assert timing.calibrate(clock.fn, 0.002, clock.timer) == (1, 0.5)
    assert clock.calls == 1
    # unless the sample floor is longer still
    clock = FakeClock(0.5)
    number, _ = timing.calibrate(clock.fn, 1.2, clock.timer)
    assert number == 3 and clock.calls == 1 + 1 + 3


class SetUpFirst(FakeClock):
    """A call that costs `first_s` once (a process's one-time set-up), then `cost_s`."""

    def __init__(self, first_s, cost_s):
        super().__init__(cost_s)
        self.first_s = first_s

    def fn(self):
        self.now += self.first_s - self.cost_s if self.calls == 0 else 0.0
        super().fn()


def test_a_slow_first_call_of_a_micro_row_is_not_the_estimate():
    """bert_layer_train on the H200 host: first backward 0.6 s (autograd's CUDA device
    threads), then 23 ms a call; the estimate decides whether blocks are warmed up."""
    clock = SetUpFirst(0.6, 0.023)
    assert timing.calibrate(clock.fn, 0.002, clock.timer) == (1, 0.6)  # a whole model's rule
    clock = SetUpFirst(0.6, 0.023)
    number, per_call = timing.calibrate(clock.fn, 0.002, clock.timer, first_may_be_setup=True)
    assert (number, per_call) == (1, pytest.approx(0.023))
    assert per_call < timing.WARMUP_SKIP_CALL_S
    # a row slow in every call still ends at one call per sample, one call later
    clock = FakeClock(0.7)
    assert timing.calibrate(clock.fn, 0.002, clock.timer, first_may_be_setup=True) == (1, 0.7)
    assert clock.calls == 2


def test_warm_up_runs_for_its_time():
    clock = FakeClock(0.001)
    calls = timing.warm_up(clock.fn, 0.02, 0.001, clock.timer)
    assert calls == 20


def test_warm_up_skipped_for_slow_calls():
    clock = FakeClock(0.3)
    assert timing.warm_up(clock.fn, 0.02, 0.3, clock.timer) == 0
    assert clock.calls == 0


def test_measure_block_samples_until_time():
    clock = FakeClock(0.001)
    samples = timing.measure_block(clock.fn, 4, 0.02, timer=clock.timer)
    assert samples == [pytest.approx(0.001)] * 5


def test_measure_block_min_samples_beyond_time():
    clock = FakeClock(1.0)
    samples = timing.measure_block(clock.fn, 1, 0.01, min_samples=3, timer=clock.timer)
    assert samples == [1.0, 1.0, 1.0]


def test_sync_brackets_the_interval():
    events = []
    clock = FakeClock(0.001)
    timing.time_calls(lambda: events.append("call"), 2, clock.timer, lambda: events.append("sync"))
    assert events == ["sync", "call", "call", "sync"]


class Clock:
    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


def test_device_warm_up_counts_calls_instead_of_timing_them():
    calls, syncs = [], []
    made = timing.warm_up(lambda: calls.append(1), 0.02, 0.0017, timer=Clock(1e-6),
                          sync=lambda: syncs.append(1))
    assert made == 11 == len(calls)      # 0.02 s / 1.7 ms per call
    assert syncs == [1]


def test_device_warm_up_makes_at_least_one_call():
    calls = []
    assert timing.warm_up(lambda: calls.append(1), 0.02, 0.1, sync=lambda: None) == 1


def test_host_warm_up_is_bounded_by_the_clock():
    calls = []
    # binary fractions keep the clock arithmetic exact: warm-up 4 ticks, 1 tick per read
    made = timing.warm_up(lambda: calls.append(1), 4 / 128, 0.001, timer=Clock(1 / 128))
    assert made == len(calls) == 3


def test_measure_block_calls_after_sample_once_per_sample():
    seen = []
    samples = timing.measure_block(lambda: None, 4, 0.03, timer=Clock(0.01),
                                   after_sample=lambda: seen.append(len(seen)))
    assert len(samples) == len(seen) >= 1


def test_stalled_compares_the_block_median_with_the_best_block():
    assert timing.stalled([0.008, 0.008, 0.0018], 0.0018)  # median 8 ms vs 1.8 ms best
    assert not timing.stalled([0.008, 0.0018, 0.0018], 0.0018)  # one slow sample
    assert not timing.stalled([0.004], 0.0018)  # 2.2x: under STALL_FACTOR
    assert timing.stalled([0.0045], 0.0018)  # 2.5x
    assert not timing.stalled([0.008], None)  # no best yet
    assert not timing.stalled([], 0.0018)
    # whole-model calls (>= WARMUP_SKIP_CALL_S) are never measured again
    assert not timing.stalled([10.0], timing.WARMUP_SKIP_CALL_S)
