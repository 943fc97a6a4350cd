"""The threads that run an all-core block, spread one per allowed CPU (probe.worker).

Why (16-vCPU H200 host, idle, 2026-12-03): in 5-50 % of all-core blocks every call
took a near-fixed 8 ms, two 4 ms scheduler ticks (matmul 1024^2: 1.8 ms otherwise,
LayerNorm 0.4 ms), most often in the first block after a pause.  Two threads of the
OpenMP pool had been woken onto one CPU, and the spinning pool kept them there.  Such a
block measures where the kernel put the threads, not the build: whole pairs read 7 %
or 1362 % in A/A audits.  With OMP_WAIT_POLICY=passive (threads sleep at every
barrier, so each wake-up places them afresh) 0 of 324 blocks stalled, but the wait
policy is the build's run-time configuration under audit, not the audit's to set.

How: the threads that ran during the warm-up (their run time in
/proc/self/task/TID/schedstat grew) are bound for the block one per allowed CPU, in
thread-id order, then given their masks back: both sides are placed alike, as the
calling thread of one-thread rows is (probe.worker.calling_thread_on).  What stays a
fact of the build: a thread the runtime bound itself (its mask narrower than the
process's: OMP_PROC_BIND, GOMP_CPU_AFFINITY, KMP_AFFINITY) keeps its binding; more
running threads than CPUs share CPUs (an oversubscribed pool stays slow); a process
allowed one CPU is left alone (a target started on core 0 stays slow).  Linux only;
elsewhere nothing is bound.  Standard library only.
"""

import contextlib
import os
from typing import Dict, Iterator, List, Optional

_TASKS = "/proc/self/task"


def run_times() -> Optional[Dict[int, int]]:
    """{thread id: ns it has run on a CPU} of this process's threads, from
    /proc/self/task/TID/schedstat (field 1); None where that cannot be read."""
    try:
        tids = [int(t) for t in os.listdir(_TASKS)]
    except (OSError, ValueError):
        return None
    found = {}
    for tid in tids:
        try:
            with open("%s/%d/schedstat" % (_TASKS, tid)) as handle:
                found[tid] = int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return found or None


def plan(before: Dict[int, int], after: Dict[int, int], cpus: List[int],
         masks: Dict[int, frozenset]) -> Dict[int, int]:
    """{thread id: CPU} for the threads that ran between `before` and `after`, one per
    CPU of `cpus` in thread-id order (wrapping when there are more), leaving out those
    whose mask (`masks`) is narrower than `cpus`; {} for fewer than two CPUs."""
    if len(cpus) < 2:
        return {}
    ran = sorted(tid for tid, ns in after.items() if ns > before.get(tid, 0))
    free = [tid for tid in ran if masks.get(tid) == frozenset(cpus)]
    return {tid: cpus[slot % len(cpus)] for slot, tid in enumerate(free)}


@contextlib.contextmanager
def spread(before: Optional[Dict[int, int]]) -> Iterator[int]:
    """Bind the threads that ran since `before` (run_times) one per allowed CPU for the
    body, then restore their masks; yields how many were bound (0: nothing done)."""
    after = run_times() if before is not None and hasattr(os, "sched_setaffinity") else None
    if after is None:
        yield 0
        return
    cpus = sorted(os.sched_getaffinity(0))
    masks = {tid: _mask(tid) for tid in after}
    bound = {}
    for tid, cpu in plan(before, after, cpus, masks).items():
        try:
            os.sched_setaffinity(tid, {cpu})
            bound[tid] = masks[tid]
        except OSError:  # the thread has ended
            continue
    try:
        yield len(bound)
    finally:
        for tid, mask in bound.items():
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                continue


def _mask(tid: int) -> Optional[frozenset]:
    try:
        return frozenset(os.sched_getaffinity(tid))
    except OSError:
        return None
