"""The worker's run reply carries extra per-sample metrics of callables with .extra()."""

import json
import os

import pytest

from eb_torchperf.probe import registry, worker
from eb_torchperf.probe.registry import Benchmark


class Counting:
    """A timed callable that reports a made-up CPU time per call for each sample."""

    def __init__(self):
        self.samples = 0

    def __call__(self):
        pass

    def extra(self):
        self.samples += 1
        return {"cpu_s": 1e-5 * self.samples}


def test_run_reply_has_one_extra_value_per_sample(monkeypatch):
    bench = Benchmark(name="fake_extra", device="cpu", family="test",
                      params={"quick": ({},)}, setup=lambda torch, p: Counting(),
                      work=lambda p: (1.0, "op"))
    monkeypatch.setitem(registry.REGISTRY, "fake_extra", bench)
    state = worker.WorkerState(torch=None)
    replies = []
    requests = [json.dumps({"op": "prepare", "bench": "fake_extra", "min_sample_s": 1e-4}),
                json.dumps({"op": "run", "bench": "fake_extra", "number": 10, "warmup_s": 0,
                            "block_s": 0.005, "min_samples": 3}),
                json.dumps({"op": "quit"})]
    worker.serve(state, requests, replies.append)
    run = replies[1]
    assert run["ok"] is True
    assert len(run["extra_s"]["cpu_s"]) == len(run["times_s"]) >= 3
    assert run["extra_s"]["cpu_s"][:3] == pytest.approx([1e-5, 2e-5, 3e-5])


def test_plain_callable_gets_no_extra_field():
    after, values = worker._extra_collector(lambda: None)
    assert after is None and values == {}


def test_a_benchmarks_own_sample_floor_raises_the_calls_per_sample(monkeypatch):
    import time

    def setup(torch, params):
        return lambda: time.sleep(0.001)

    for floor, at_least, at_most in ((0.0, 1, 2), (0.02, 10, 40)):
        bench = Benchmark(name="fake_floor", device="cpu", family="test",
                          params={"quick": ({},)}, setup=setup, work=lambda p: (1.0, "op"),
                          min_sample_s=floor)
        monkeypatch.setitem(registry.REGISTRY, "fake_floor", bench)
        replies = []
        worker.serve(worker.WorkerState(torch=None), [
            json.dumps({"op": "prepare", "bench": "fake_floor", "min_sample_s": 1e-3,
                        "prepare_warmup_s": 0})], replies.append)
        # each call sleeps >= 1 ms: 1 call fills the audit's 1 ms; 20 ms need 10-20 calls
        # (calibration may overshoot up to 2x)
        assert at_least <= replies[0]["number"] <= at_most, (floor, replies[0])


def test_calling_thread_on_pins_one_cpu_of_the_allowed_set_and_restores():
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity on this platform")
    from eb_torchperf.probe.worker import calling_thread_on
    before = os.sched_getaffinity(0)
    cpus = sorted(before)
    for slot in range(len(cpus) + 1):
        with calling_thread_on(slot):
            assert os.sched_getaffinity(0) == {cpus[slot % len(cpus)]}
        assert os.sched_getaffinity(0) == before
    with calling_thread_on(None):
        assert os.sched_getaffinity(0) == before


def test_single_threaded_rows():
    registry.load_suites()
    reg = registry.REGISTRY
    assert reg["dispatch"].single_threaded({"numel": 1})
    assert reg["denormal"].single_threaded({"numel": 16384, "values": "normal"})
    assert reg["thread_scaling"].single_threaded({"n": 512, "threads": 1})
    assert not reg["thread_scaling"].single_threaded({"n": 512, "threads": "all"})
    assert not reg["matmul_fp32"].single_threaded({"n": 512})
    assert reg["gemm_cuda"].single_threaded({})


class Stalling:
    """A callable of ~1 ms whose calls take ~20 ms while `stalls` (a count of calls)
    lasts: the H200 host's stalled blocks (every call at two 4 ms ticks) in miniature,
    far enough beyond STALL_FACTOR that a slow sleep on a busy VM cannot blur it."""

    def __init__(self, stalls):
        self.stalls = stalls

    def __call__(self):
        import time
        if self.stalls > 0:
            self.stalls -= 1
            time.sleep(0.02)
        else:
            time.sleep(0.001)


def _serve_runs(monkeypatch, stalls, **run_fields):
    """Prepare a fake benchmark of ~1 ms calls (calibrated unstalled: the best block so
    far), then make its next `stalls` calls take ~8 ms and send one run request; the
    run reply."""
    fn = Stalling(0)
    bench = Benchmark(name="fake_stall", device="cpu", family="test",
                      params={"quick": ({},)}, setup=lambda torch, p: fn,
                      work=lambda p: (1.0, "op"))
    monkeypatch.setitem(registry.REGISTRY, "fake_stall", bench)

    def requests():
        yield json.dumps({"op": "prepare", "bench": "fake_stall", "min_sample_s": 1e-3,
                          "prepare_warmup_s": 0})
        fn.stalls = stalls
        yield json.dumps(dict(op="run", bench="fake_stall", number=1, warmup_s=0,
                              block_s=0.01, **run_fields))

    replies = []
    worker.serve(worker.WorkerState(torch=None), requests(), replies.append)
    return replies[1]


def test_a_stalled_block_is_measured_again_and_counted(monkeypatch):
    # the first block's calls stall (20x the calibrated 1 ms): measured again, the retry
    # is clean and kept, and the reply counts one block measured again
    reply = _serve_runs(monkeypatch, 1, stall_retries=2)
    assert reply["ok"] is True
    assert sorted(reply["times_s"])[len(reply["times_s"]) // 2] < 0.004
    assert reply["contention"]["stalled_blocks"] == 1


def test_a_build_slow_in_every_block_is_kept_slow(monkeypatch):
    # stalls that outlast the retries (a pinned or oversubscribed build): the last
    # block is kept as measured, slow, after at most stall_retries blocks more
    reply = _serve_runs(monkeypatch, 10 ** 6, stall_retries=2)
    assert min(reply["times_s"]) > 0.015
    assert reply["contention"]["stalled_blocks"] == 2


def test_no_retries_keeps_the_stalled_block(monkeypatch):
    reply = _serve_runs(monkeypatch, 1)
    assert max(reply["times_s"]) > 0.015
    assert reply["contention"]["stalled_blocks"] == 0


def _prepared_per_call(monkeypatch, budget_s):
    """per_call_s of a prepared fake row whose first call sleeps 0.55 s (one-time
    set-up) and later calls 1 ms; `budget_s` set makes it a whole-model row."""
    fn = Stalling(0)
    first = {"left": True}

    def call():
        if first.pop("left", False):
            import time
            time.sleep(0.55)
        fn()
    bench = Benchmark(name="fake_setup", device="cpu", family="test",
                      params={"quick": ({},)}, setup=lambda torch, p: call,
                      work=lambda p: (1.0, "op"), budget_s=budget_s)
    monkeypatch.setitem(registry.REGISTRY, "fake_setup", bench)
    replies = []
    worker.serve(worker.WorkerState(torch=None), iter([json.dumps(
        {"op": "prepare", "bench": "fake_setup", "min_sample_s": 1e-3,
         "prepare_warmup_s": 0})]), replies.append)
    return replies[0]["per_call_s"]


def test_a_micro_rows_slow_first_call_is_set_up_not_its_speed(monkeypatch):
    # a micro row goes on calibrating: its blocks are then warmed up and spread
    assert _prepared_per_call(monkeypatch, None) < 0.05
    # a whole model (own budget) keeps its first call as the estimate: one call less
    assert _prepared_per_call(monkeypatch, 4.0) >= 0.5
