"""How busy the host was while a row was measured: fractions from the workers' counters.

Each `run` reply carries probe.contention.delta over its warm-up and block; the runner
sums them per side and pair (probe.contention.add) and `fractions` turns the sum into
BenchResult.contention:
- other_cpu: share (0..1) of the allowed CPUs' time that other processes used:
  (busy ticks on the allowed CPUs - this worker's own CPU time - the audit's other
  processes' time: the other side's worker, the runner) / (wall x CPUs);
- steal: share of the allowed CPUs' ticks the hypervisor gave to other guests;
- tick_noise: how far other_cpu and steal can read off by chance (two standard
  deviations, a share): /proc/stat counts in ticks of 10 ms (USER_HZ 100), sampled at
  each tick and cut at each block's ends, so a block of 25 ms on one CPU is ±40 %; the
  sum over a result's blocks is finer.  Variance in ticks: blocks x CPUs / 4 (cut ends)
  + ticks / 4 (sampling), https://www.kernel.org/doc/html/latest/filesystems/proc.html;
- self_cpu: the worker's own CPU seconds per wall second (1.0 = one busy thread);
- runq: mean runnable tasks of *other* processes waiting on the allowed CPUs:
  /proc/schedstat run delay per wall second minus the run delay of the audit's own
  threads (a target pinned to one core with many threads waits for itself: that is
  its misconfiguration, not a busy host); where the kernel has no schedstat,
  /proc/stat procs_running (system-wide, read before and after each block) less the
  audit's own runnable threads, minus the host's CPUs;
- stalled: blocks measured again per block (probe.timing.stalled: a block at 2.5x its
  worker's best or slower), evidence of a host that stalls the workers' threads.
Thresholds (`contended`) are module constants; a share counts only beyond its
tick_noise.
"""

import math
import statistics
import time
from typing import Callable, Dict, Iterable, Mapping, Optional

from eb_torchperf.probe import contention as counters

#: Other processes used more than this share of the allowed CPUs: the row was measured
#: under contention.  10 %: on 2 cores, one competing thread a fifth of the time; on
#: the 16-core H200 host idle, the quick audit's rows read 0-3 % (docs/measurement.md).
BUSY_OTHER_CPU = 0.10
#: Steal above this share: the hypervisor ran other guests on our CPUs.  10 %: steal
#: hits both interleaved sides alike, and a shared VM steals a few % while it works
#: (this project's 2-core dev VM: 0.5 % idle, median 5.6-7.7 % of a quick audit's
#: results, 2026-12-03); more means other guests take a core's worth.
BUSY_STEAL = 0.10
#: More than this many runnable tasks waited, on average, beyond the allowed CPUs.
BUSY_RUNQ = 1.0


def fractions(raw: Mapping[str, float]) -> Dict[str, float]:
    """BenchResult.contention from summed probe.contention deltas; keys whose
    counters were not read are left out ({} for an empty or zero-wall sum)."""
    wall, cpus = raw.get("wall", 0.0), raw.get("cpus", 0)
    if wall <= 0 or cpus <= 0:
        return {}
    out = {"self_cpu": raw.get("own_cpu", 0.0) / wall}
    tick = raw.get("tick_s", 0.01)
    if "busy_ticks" in raw:
        other = ((raw["busy_ticks"] - raw.get("excluded_ticks", 0)) * tick
                 - raw.get("own_cpu", 0.0))
        out["other_cpu"] = min(1.0, max(0.0, other / (wall * cpus)))
    if raw.get("total_ticks"):
        out["steal"] = max(0.0, raw.get("steal_ticks", 0) / raw["total_ticks"])
    if raw.get("blocks") and "busy_ticks" in raw:
        ticks = wall * cpus / tick
        out["tick_noise"] = min(1.0, math.sqrt(raw["blocks"] * cpus + ticks) / ticks)
    if "stalled_blocks" in raw and raw.get("blocks"):
        out["stalled"] = raw["stalled_blocks"] / raw["blocks"]
    runq = _runq(raw, wall)
    if runq is not None:
        out["runq"] = runq
    return {k: round(v, 4) for k, v in out.items()}


def _runq(raw: Mapping[str, float], wall: float) -> Optional[float]:
    """Other processes' runnable tasks waiting, on average (see the module)."""
    if "run_delay_ns" in raw:
        return max(0.0, (raw["run_delay_ns"] - raw.get("own_delay_ns", 0)) * 1e-9 / wall)
    if raw.get("running_n"):
        host = raw.get("host_cpus", raw.get("cpus", 1))
        return max(0.0, raw["running_sum"] / raw["running_n"] - host)
    return None


def contended(contention: Mapping[str, float]) -> bool:
    """True when a row's contention (BenchResult.contention) passes any threshold,
    other_cpu and steal beyond their tick_noise."""
    noise = contention.get("tick_noise", 0.0)
    return (contention.get("other_cpu", 0.0) - noise > BUSY_OTHER_CPU
            or contention.get("steal", 0.0) - noise > BUSY_STEAL
            or contention.get("runq", 0.0) > BUSY_RUNQ)


def host_load(contentions: Iterable[Mapping[str, float]]) -> Dict[str, object]:
    """AuditResult.conditions' load summary over every result's contention:
    other_cpu_median, other_cpu_max, steal_max, runq_median, contended_results,
    busy (the median other-CPU share or steal passes its threshold); {} when nothing
    was measured."""
    rows = [c for c in contentions if c]
    if not rows:
        return {}
    other = [c["other_cpu"] for c in rows if "other_cpu" in c]
    runq = [c["runq"] for c in rows if "runq" in c]
    steal = [c["steal"] for c in rows if "steal" in c]
    summary = {"contended_results": sum(contended(c) for c in rows), "results": len(rows)}
    if other:
        summary.update(other_cpu_median=round(statistics.median(other), 4),
                       other_cpu_max=round(max(other), 4))
    if runq:
        summary["runq_median"] = round(statistics.median(runq), 3)
    if steal:
        summary["steal_max"] = round(max(steal), 4)
    summary["busy"] = bool(_median_or(other) > BUSY_OTHER_CPU
                           or _median_or(steal) > BUSY_STEAL
                           or _median_or(runq) > BUSY_RUNQ)
    return summary


def _median_or(values, default: float = 0.0) -> float:
    return statistics.median(values) if values else default


def worst(contentions: Iterable[Mapping[str, float]]) -> Dict[str, float]:
    """Key by key, the largest value over several results' contention (a row's two
    sides and its pairs); {} when none was measured."""
    out: Dict[str, float] = {}
    for c in contentions:
        for key, value in c.items():
            out[key] = max(out.get(key, value), value)
    return out


def idle_enough(load: Optional[Mapping[str, object]]) -> bool:
    """True when a host-load summary (host_load) does not say busy."""
    return not (load or {}).get("busy", False)


#: Seconds of one idleness reading of wait_idle; idle readings needed in a row.
IDLE_WINDOW_S = 1.0
IDLE_READINGS = 3


def wait_idle(limit_s: float, progress: Callable = lambda event, **info: None,
              window_s: float = IDLE_WINDOW_S, sleep: Callable = time.sleep
              ) -> Dict[str, object]:
    """Wait until other processes leave the allowed CPUs idle (other_cpu at most
    BUSY_OTHER_CPU and steal at most BUSY_STEAL over IDLE_READINGS windows in a row),
    at most `limit_s` seconds.

    Returns:
        {"waited_idle_s": seconds waited, "idle_at_start": True when the host was
        found idle, False when the limit ran out first (the audit then measures anyway
        and its rows say how busy it was)}.
    """
    started, calm = time.monotonic(), 0
    while True:
        before = counters.snapshot()
        sleep(window_s)
        load = fractions(counters.delta(before, counters.snapshot()))
        calm = calm + 1 if not contended(dict(load, runq=0.0)) else 0
        waited = time.monotonic() - started
        if calm >= IDLE_READINGS or waited >= limit_s:
            return {"waited_idle_s": round(waited, 1), "idle_at_start": calm >= IDLE_READINGS}
        progress("wait_idle", other_cpu=load.get("other_cpu"), waited_s=waited)
