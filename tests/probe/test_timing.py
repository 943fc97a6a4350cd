"""warm_up and measure_block with a fake clock."""

from eb_torchperf.probe import timing


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
