"""How busy the host is around a timed block: raw counters read in the worker.

A snapshot reads, for the CPUs this process may run on:
- /proc/stat per-CPU lines (USER_HZ ticks): busy time (user+nice+system+irq+softirq)
  and steal, https://www.kernel.org/doc/html/latest/filesystems/proc.html (1.8);
- /proc/schedstat per-CPU `run_delay` (ns that runnable tasks waited on that CPU's run
  queue, field 8 of a `cpuN` line, version 15+),
  https://www.kernel.org/doc/html/latest/scheduler/sched-stats.html;
- /proc/PID/task/TID/schedstat and stat of this process and the audit's other
  processes: the run delay of their threads (field 2) and how many are runnable, which
  is not other processes' load: a target pinned to one core with 16 threads waits on
  its own run queue;
- the process's own CPU time (getrusage: every thread), and the wall clock.
`delta(before, after)` gives the raw differences; the host turns them into fractions
(eb_torchperf.measure.contention).  A file that cannot be read leaves its keys out:
missing means not measured, never zero.  Stdlib only; no side effects on import.
"""

import os
import resource
import time

#: Fields of a /proc/stat cpu line counted as busy (after the label): user, nice,
#: system, irq, softirq (idle and iowait are not busy; guest time is inside user).
_BUSY_FIELDS = (0, 1, 2, 5, 6)
_STEAL_FIELD = 7


def allowed_cpus():
    """The CPU numbers this process may run on (all CPUs where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return frozenset(os.sched_getaffinity(0))
    return frozenset(range(os.cpu_count() or 1))


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def _cpu_lines(text, cpus):
    """{cpu number: [int fields]} of the `cpuN` lines of `text` for `cpus`."""
    found = {}
    for line in (text or "").splitlines():
        label, _, rest = line.partition(" ")
        if label.startswith("cpu") and label[3:].isdigit() and int(label[3:]) in cpus:
            try:
                found[int(label[3:])] = [int(v) for v in rest.split()]
            except ValueError:
                continue
    return found


def _process_ticks(pid):
    """utime + stime of process `pid` in ticks (/proc/PID/stat fields 14-15), None
    where it cannot be read."""
    text = _read("/proc/%d/stat" % int(pid))
    if not text:
        return None
    fields = text.rpartition(")")[2].split()
    try:
        return int(fields[11]) + int(fields[12])
    except (IndexError, ValueError):
        return None


def snapshot(cpus=None, exclude_pids=()):
    """Counters now: {"wall", "own_cpu", and where readable "busy_ticks",
    "steal_ticks", "total_ticks", "run_delay_ns", "excluded_ticks"}; wall and own_cpu
    in seconds.  `exclude_pids`: processes of the audit itself (the other side's
    worker, the runner), whose CPU time is not other processes' load: the other
    worker's OpenMP threads spin for a few ms after its block (16-core H200 host, idle:
    12 % of the CPUs' time in all-core rows, counted as "other" before)."""
    cpus = allowed_cpus() if cpus is None else cpus
    usage = resource.getrusage(resource.RUSAGE_SELF)
    snap = {"wall": time.monotonic(), "own_cpu": usage.ru_utime + usage.ru_stime}
    if exclude_pids:
        ticks = [_process_ticks(pid) for pid in exclude_pids]
        snap["excluded_ticks"] = sum(t for t in ticks if t is not None)
    stat = _cpu_lines(_read("/proc/stat"), cpus)
    if stat and len(stat) == len(cpus):
        snap["busy_ticks"] = sum(sum(f[i] for i in _BUSY_FIELDS if i < len(f))
                                 for f in stat.values())
        snap["steal_ticks"] = sum(f[_STEAL_FIELD] for f in stat.values()
                                  if len(f) > _STEAL_FIELD)
        snap["total_ticks"] = sum(sum(f[:8]) for f in stat.values())
    sched = _cpu_lines(_read("/proc/schedstat"), cpus)
    if sched and len(sched) == len(cpus) and all(len(f) >= 8 for f in sched.values()):
        snap["run_delay_ns"] = sum(f[7] for f in sched.values())
    own_delay, own_running = _audit_threads((os.getpid(),) + tuple(exclude_pids))
    if "run_delay_ns" in snap:
        snap["own_delay_ns"] = own_delay
    running = _procs_running(_read("/proc/stat"))
    if running is not None:
        snap["running_sum"], snap["running_n"] = max(0, running - own_running), 1
    return snap


def _audit_threads(pids):
    """(ns the threads of processes `pids` waited on a run queue, summed from
    /proc/PID/task/TID/schedstat field 2; how many of them are runnable now, state R of
    /proc/PID/task/TID/stat).  Threads that cannot be read count as 0."""
    delay = running = 0
    for pid in pids:
        folder = "/proc/%d/task" % int(pid)
        try:
            tids = os.listdir(folder)
        except OSError:
            continue
        for tid in tids:
            fields = (_read("%s/%s/schedstat" % (folder, tid)) or "").split()
            if len(fields) >= 2 and fields[1].isdigit():
                delay += int(fields[1])
            state = (_read("%s/%s/stat" % (folder, tid)) or "").rpartition(")")[2].split()
            running += bool(state) and state[0] == "R"
    return delay, running


def _procs_running(text):
    """The `procs_running` count of /proc/stat (system-wide, this reader included)."""
    for line in (text or "").splitlines():
        if line.startswith("procs_running "):
            return int(line.split()[1])
    return None


def delta(before, after):
    """after - before for every key both snapshots hold (running_sum, running_n: the
    two readings summed), plus "blocks" (1: sums count the timed blocks), "cpus" (the
    allowed CPUs), "host_cpus" (all online CPUs) and "tick_s" (seconds per tick)."""
    out = {k: after[k] + before[k] if k.startswith("running_") else after[k] - before[k]
           for k in before if k in after}
    out["blocks"] = 1
    out["cpus"] = len(allowed_cpus())
    out["host_cpus"] = os.cpu_count() or out["cpus"]
    out["tick_s"] = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
    return out


_CONSTANTS = ("cpus", "host_cpus", "tick_s")


def add(total, more):
    """Sum two deltas key by key (a key missing in either is dropped, except the
    constants cpus, host_cpus and tick_s, which are kept)."""
    if not total:
        return dict(more)
    out = {k: total[k] + more[k] for k in total if k in more and k not in _CONSTANTS}
    for key in _CONSTANTS:
        if key in more:
            out[key] = more[key]
    return out
