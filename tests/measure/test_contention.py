"""Host load around timed blocks: the worker's raw counters, the fractions, the flags."""

import os
import subprocess
import sys
import time

import pytest

from eb_torchperf.measure import contention as busy
from eb_torchperf.probe import contention as counters


def test_cpu_lines_read_only_the_allowed_cpus():
    text = ("cpu  9 9 9 9 9 9 9 9 0 0\ncpu0 100 0 50 800 0 5 5 10 0 0\n"
            "cpu1 1 1 1 1 1 1 1 1 0 0\nintr 5\nprocs_running 3\n")
    lines = counters._cpu_lines(text, {0})
    assert list(lines) == [0] and lines[0][:3] == [100, 0, 50]
    assert counters._procs_running(text) == 3


def test_snapshot_and_delta_on_this_host():
    before = counters.snapshot(exclude_pids=(os.getpid(),))
    sum(range(200000))
    raw = counters.delta(before, counters.snapshot(exclude_pids=(os.getpid(),)))
    assert raw["wall"] > 0 and raw["own_cpu"] >= 0
    assert raw["cpus"] == len(os.sched_getaffinity(0)) and raw["tick_s"] > 0
    assert raw["running_n"] == 2  # two readings summed


def test_fractions_subtract_own_and_excluded_time():
    raw = {"wall": 1.0, "cpus": 2, "tick_s": 0.01, "own_cpu": 0.5, "busy_ticks": 150,
           "excluded_ticks": 20, "steal_ticks": 10, "total_ticks": 200,
           "running_sum": 10, "running_n": 2}
    out = busy.fractions(raw)
    # (1.5 s busy - 0.2 s of the audit's other processes - 0.5 s own) / 2 CPU-seconds
    assert out["other_cpu"] == pytest.approx(0.4)
    assert out["steal"] == pytest.approx(0.05) and out["self_cpu"] == pytest.approx(0.5)
    assert out["runq"] == pytest.approx(3.0)  # 5 running on average, 2 CPUs
    assert busy.contended(out)
    assert busy.fractions({}) == {} and busy.fractions({"wall": 0.0, "cpus": 2}) == {}


def test_stalled_blocks_are_a_share_of_the_blocks_and_not_load():
    # two run replies summed: 3 blocks measured again over 2 timed blocks
    raw = counters.add({"wall": 0.5, "cpus": 16, "own_cpu": 4.0, "blocks": 1,
                        "stalled_blocks": 1},
                       {"wall": 0.5, "cpus": 16, "own_cpu": 4.0, "blocks": 1,
                        "stalled_blocks": 2})
    out = busy.fractions(raw)
    assert out["stalled"] == pytest.approx(1.5)
    assert not busy.contended(out)  # evidence of a stalling host, not other processes


def test_missing_counters_are_left_out_not_zero():
    out = busy.fractions({"wall": 2.0, "cpus": 4, "own_cpu": 1.0})
    assert out == {"self_cpu": 0.5}
    assert not busy.contended(out)


@pytest.mark.parametrize("load, expected", [
    ({"other_cpu": busy.BUSY_OTHER_CPU}, False),
    ({"other_cpu": busy.BUSY_OTHER_CPU + 0.01}, True),
    ({"steal": busy.BUSY_STEAL + 0.01}, True),
    ({"runq": busy.BUSY_RUNQ + 0.5}, True),
])
def test_contended_thresholds(load, expected):
    assert busy.contended(load) is expected


def test_host_load_summary():
    quiet = [{"other_cpu": 0.01, "runq": 0.0}] * 3
    loud = [{"other_cpu": 0.5, "runq": 2.0}] * 4
    summary = busy.host_load(quiet + loud + [{}])
    assert summary["busy"] and summary["contended_results"] == 4 and summary["results"] == 7
    assert summary["other_cpu_median"] == 0.5 and summary["other_cpu_max"] == 0.5
    assert not busy.host_load(quiet)["busy"]
    assert busy.host_load([]) == {}


def test_worst_takes_the_larger_value_per_key():
    assert busy.worst([{"other_cpu": 0.1, "runq": 2.0}, {"other_cpu": 0.3}]) == {
        "other_cpu": 0.3, "runq": 2.0}


def test_wait_idle_gives_up_at_its_limit():
    waits = []
    answer = busy.wait_idle(0.0, sleep=waits.append, window_s=0.0)
    assert waits == [0.0] and set(answer) == {"waited_idle_s", "idle_at_start"}


def test_own_threads_waiting_are_not_other_processes_load():
    # a target pinned to one core with 16 threads waits for itself: its misconfiguration
    raw = {"wall": 1.0, "cpus": 1, "tick_s": 0.01, "own_cpu": 1.0,
           "run_delay_ns": 15e9, "own_delay_ns": 14.8e9}
    assert busy.fractions(raw)["runq"] == pytest.approx(0.2)
    # without schedstat: procs_running is system-wide, so it is held against the host
    fallback = {"wall": 1.0, "cpus": 1, "host_cpus": 16, "running_sum": 34, "running_n": 2}
    assert busy.fractions(fallback)["runq"] == 1.0


def test_tick_noise_keeps_a_one_core_result_from_reading_busy_by_chance():
    # one core, 12 blocks, 0.36 s: +-1 tick per block end and sampling are ~19 %
    raw = {"wall": 0.36, "cpus": 1, "tick_s": 0.01, "own_cpu": 0.28, "busy_ticks": 36,
           "blocks": 12, "steal_ticks": 4, "total_ticks": 36}
    out = busy.fractions(raw)
    assert out["tick_noise"] == pytest.approx((12 + 36) ** 0.5 / 36, abs=1e-4)
    assert out["other_cpu"] == pytest.approx(0.2222, abs=1e-4) and not busy.contended(out)
    assert busy.contended(dict(out, other_cpu=0.35))
    # 16 cores over the same blocks: the noise is a few %, 15 % others is busy
    many = busy.fractions(dict(raw, cpus=16, busy_ticks=16 * 36))
    assert many["tick_noise"] < 0.05 and busy.contended(dict(many, other_cpu=0.15))


def _spinners(count, cpu):
    kids = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    for kid in kids:
        os.sched_setaffinity(kid.pid, {cpu})
    return kids


def test_the_audits_own_busy_processes_on_our_core_are_not_contention():
    # real processes: four spinning children on the core this test is pinned to.  As
    # the audit's own (excluded) they are not load; as strangers they are.
    cpu, saved = min(os.sched_getaffinity(0)), os.sched_getaffinity(0)
    kids = _spinners(4, cpu)
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.2)
        own, stranger = (counters.snapshot(exclude_pids=[k.pid for k in kids]),
                         counters.snapshot())
        time.sleep(1.0)
        own = busy.fractions(counters.delta(own, counters.snapshot(
            exclude_pids=[k.pid for k in kids])))
        stranger = busy.fractions(counters.delta(stranger, counters.snapshot()))
    finally:
        os.sched_setaffinity(0, saved)
        for kid in kids:
            kid.kill()
            kid.wait()
    assert stranger["other_cpu"] > 0.6 and busy.contended(stranger)
    assert own["other_cpu"] < stranger["other_cpu"] - 0.4
    assert own["runq"] <= busy.BUSY_RUNQ < stranger["runq"]
