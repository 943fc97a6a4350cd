"""Threads of an all-core block spread one per allowed CPU (probe.placement)."""

import os
import threading

import pytest

from eb_torchperf.probe import placement

ALL = frozenset({0, 1, 2, 3})


def test_plan_binds_the_threads_that_ran_one_per_cpu_in_thread_id_order():
    before = {10: 5, 11: 5, 12: 5, 13: 5}
    after = {10: 9, 11: 5, 12: 7, 13: 8}  # 11 slept through the warm-up
    assert placement.plan(before, after, [0, 1, 2, 3], dict.fromkeys(after, ALL)) == {
        10: 0, 12: 1, 13: 2}


def test_plan_wraps_an_oversubscribed_pool_and_keeps_runtime_bindings():
    before = dict.fromkeys(range(1, 7), 0)
    after = dict.fromkeys(range(1, 7), 1)
    masks = dict.fromkeys(after, frozenset({0, 1}))
    masks[3] = frozenset({1})  # bound by the OpenMP runtime (OMP_PROC_BIND): left alone
    assert placement.plan(before, after, [0, 1], masks) == {1: 0, 2: 1, 4: 0, 5: 1, 6: 0}
    # a thread that started after `before` ran too
    assert placement.plan({}, {7: 3}, [0, 1], {7: frozenset({0, 1})}) == {7: 0}


def test_plan_leaves_a_process_allowed_one_cpu_alone():
    assert placement.plan({1: 0}, {1: 5}, [0], {1: frozenset({0})}) == {}


def _mask(tid):
    try:
        return os.sched_getaffinity(int(tid))
    except OSError:  # the thread has ended
        return None


def _run_for(seconds):
    import time
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux and two allowed CPUs")
def test_spread_binds_running_threads_for_the_block_and_restores_them():
    allowed = os.sched_getaffinity(0)
    stop, seen = threading.Event(), {}

    def spin():
        seen["tid"] = threading.get_native_id()
        while not stop.is_set():
            pass

    before = placement.run_times()
    worker = threading.Thread(target=spin)
    worker.start()
    _run_for(0.05)  # the calling thread runs too, over several scheduler ticks
    try:
        with placement.spread(before) as bound:
            # the spinning thread started after `before`: it ran, it is bound to one CPU
            assert bound >= 1
            assert len(os.sched_getaffinity(seen["tid"])) == 1
            # the calling thread is bound too when it counts as having run (its schedstat
            # is updated at scheduler ticks); which CPU each thread gets depends on
            # thread-id order (ids wrap at pid_max) and on other threads of the process
            # that ran (earlier tests'): the bound threads take the CPUs one each, wrapping
            mine = os.sched_getaffinity(0)
            assert mine == allowed or len(mine) == 1
            single = [m for m in (_mask(t) for t in os.listdir("/proc/self/task")) if m
                      and len(m) == 1]
            assert len(set().union(*single)) >= min(bound, len(allowed))
        assert os.sched_getaffinity(0) == allowed
        assert os.sched_getaffinity(seen["tid"]) == allowed
    finally:
        stop.set()
        worker.join()
    with placement.spread(None) as bound:
        assert bound == 0
