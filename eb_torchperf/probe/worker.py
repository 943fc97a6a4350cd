"""Long-lived benchmark worker, run in the target interpreter.

Protocol (one JSON object per line): requests on stdin, replies on the file
descriptor given by `--reply-fd` (not stdout: torch and user site code may print).
The first reply is a hello, or an import failure.  Every request gets exactly one
reply `{"ok": true, ...}` or `{"ok": false, "exc_type": ..., "message": ...}`; a
failing request does not end the worker.  A run reply holds `times_s` (seconds per
call, one per sample), `contention` (probe.contention.delta over the warm-up and the
block: how busy the allowed CPUs were, and `stalled_blocks`: blocks measured again, see
_settled_block) and, for benchmarks whose callable has `.extra()`, `extra_s`
(metric -> one value per sample, seconds per call).  Ops: facts, availability, prepare, run,
release, profile, numerics, quit.
"""

import contextlib
import json
import os
import statistics
import sys
import time

from . import allocator
from . import contention
from . import facts as facts_mod
from . import facts_more
from . import numerics_more, placement, profile, registry, timing

#: Samples shorter than this are dominated by timer overhead; calibration grows the
#: calls per sample until one sample takes at least this long.
DEFAULT_MIN_SAMPLE_S = 0.002
#: Untimed seconds of calls after calibration, before the first block (see op_prepare).
PREPARE_WARMUP_S = 0.1


class WorkerState:
    """The imported torch, the collected facts, and the one prepared benchmark."""

    def __init__(self, torch):
        self.torch = torch
        self.facts = None
        self.key = None
        self.fn = None
        self.per_call_s = None
        #: the prepared benchmark's best block so far (median seconds per call)
        self.best_s = None

    def drop(self):
        """Forget the prepared benchmark; a callable with `.close()` (e.g. a process
        group with peer processes) is closed first."""
        fn, self.key, self.fn = self.fn, None, None
        close = getattr(fn, "close", None)
        if close is not None:
            close()

    def sync_for(self, bench):
        if bench.device == "cuda":
            return self.torch.cuda.synchronize
        return None


def _key(req):
    return req["bench"], json.dumps(req.get("params", {}), sort_keys=True)


@contextlib.contextmanager
def pinned_threads(torch, params):
    """Set torch intra-op threads for a benchmark whose params name `threads`; restore."""
    wanted = params.get("threads")
    if wanted is None:
        yield
        return
    if wanted == "all":
        wanted = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    before = torch.get_num_threads()
    torch.set_num_threads(int(wanted))
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def calling_thread_on(slot):
    """Run the calling thread alone on CPU number `slot` (modulo) of this process's
    allowed CPUs for the block, then restore its mask; None leaves it.

    For one-thread rows (registry.Benchmark.single_threaded): the vCPUs of a shared VM
    differ in speed (the 2-core dev VM: dispatch 1.74 µs per op pinned to CPU 1, 1.2-2.3
    µs on CPU 0), and the scheduler keeps a process's thread where it started, so two
    fresh processes differed steadily.  The runner gives both sides the same slot in a
    round and a new one every round, so both see every CPU alike.  Only the calling
    thread moves (Linux affinity is per thread); the intra-op pool keeps its own.
    """
    if slot is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    cpus = sorted(before)
    try:
        os.sched_setaffinity(0, {cpus[int(slot) % len(cpus)]})
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def op_facts(state, req):
    state.facts = facts_mod.collect_all(state.torch)
    return {"facts": state.facts}


def op_availability(state, req):
    bench = registry.REGISTRY[req["bench"]]
    if state.facts is None:
        state.facts = facts_mod.collect_all(state.torch)
    return {"reason": bench.available(state.torch, state.facts)}


def op_prepare(state, req):
    bench = registry.REGISTRY[req["bench"]]
    state.drop()
    params = req.get("params", {})
    with pinned_threads(state.torch, params):
        fn = state.fn = bench.setup(state.torch, params)  # closed by drop() if what follows fails
        min_sample_s = max(req.get("min_sample_s", DEFAULT_MIN_SAMPLE_S), bench.min_sample_s)
        # rows with their own budget are whole models (probe.suite_models): one call each
        number, per_call = timing.calibrate(fn, min_sample_s, sync=state.sync_for(bench),
                                            first_may_be_setup=bench.budget_s is None)
        # A fresh benchmark keeps speeding up for ~100 ms after calibration (oneDNN
        # primitive caches, first-touch page faults: conv3x3 ran 11.6 -> 8.0 ms over its
        # first four blocks on the dev machine), which a per-block warm-up is too short
        # to absorb; one longer untimed warm-up here keeps that out of round 0.
        timing.warm_up(fn, req.get("prepare_warmup_s", PREPARE_WARMUP_S), per_call,
                       sync=state.sync_for(bench))
    state.key, state.per_call_s, state.best_s = _key(req), per_call, per_call
    return {"number": number, "per_call_s": per_call}


def op_kernels(state, req):
    """{"kernels": the ATen operators one call of the row ran on (profile.call_kernels)}
    for a row that records them (registry.Benchmark.records_kernels), else [].

    The row is set up afresh and dropped after.  The runner asks only once a pair's timed
    blocks are all done: on the H200 host torch.profiler's first start took 4.4-5.5 s,
    and afterwards other rows of the same process ran at 0.60-1.22x their speed before
    it (0.96-1.11x without it, 5 processes each, issue 26).
    """
    bench = registry.REGISTRY[req["bench"]]
    if not bench.records_kernels:
        return {"kernels": []}
    state.drop()
    params = req.get("params", {})
    with pinned_threads(state.torch, params):
        state.fn = bench.setup(state.torch, params)
        kernels = _kernels(state.torch, state.fn)
    state.drop()
    return {"kernels": kernels}


def _kernels(torch, fn):
    """profile.call_kernels of one call, or [] where the profiler fails (a build
    without it): which kernels ran is evidence, never a reason to lose the row."""
    try:
        return profile.call_kernels(torch, fn)
    except Exception:  # noqa: BLE001 - any profiler failure only loses the evidence
        return []


def _extra_collector(fn):
    """(after_sample callback, metric -> list) for a callable with `.extra()`, else (None, {}).

    A benchmark's callable may report more than wall time: `fn.extra()` returns
    {metric: seconds per call} (e.g. CPU and GPU time of CUDA work), one value per sample.
    """
    extra = getattr(fn, "extra", None)
    if extra is None:
        return None, {}
    values = {}

    def after_sample():
        for name, seconds in extra().items():
            values.setdefault(name, []).append(seconds)
    return after_sample, values


def op_run(state, req):
    if state.key != _key(req):
        raise RuntimeError("run of %s before prepare" % req["bench"])
    exclude = tuple(req.get("exclude_pids") or ())
    before = contention.snapshot(exclude_pids=exclude)
    with pinned_threads(state.torch, req.get("params", {})), calling_thread_on(req.get("cpu_slot")):
        times, extra, remeasured = _settled_block(state, req)
    load = contention.delta(before, contention.snapshot(exclude_pids=exclude))
    load["stalled_blocks"] = remeasured
    reply = {"times_s": times, "contention": load}
    if extra:
        reply["extra_s"] = extra
    return reply


#: Seconds to wait before measuring a stalled block again (timing.stalled).
STALL_PAUSE_S = 0.03


def _settled_block(state, req):
    """(samples, extra metrics, blocks measured again) of one warmed-up block.

    The block's threads are spread one per CPU (probe.placement) where
    req["spread_threads"] asks and the row is a multi-threaded CPU row.  A block that
    timing.stalled flags is measured again, at most req["stall_retries"] times, after
    STALL_PAUSE_S; the last one is kept whatever it reads, so a build that is slow in
    every block (oversubscribed, pinned) is measured as slow."""
    bench = registry.REGISTRY[req["bench"]]
    sync = state.sync_for(bench)
    spread = (req.get("spread_threads") and bench.device == "cpu"
              and not bench.single_threaded(req.get("params", {})))
    retries = 0
    while True:
        after_sample, extra = _extra_collector(state.fn)
        ran = placement.run_times() if spread else None
        timing.warm_up(state.fn, req.get("warmup_s", 0.02), state.per_call_s, sync=sync)
        with placement.spread(ran):
            times = timing.measure_block(state.fn, req["number"], req.get("block_s", 0.05),
                                         req.get("min_samples", 1), sync=sync,
                                         after_sample=after_sample)
        if retries >= req.get("stall_retries", 0) or not timing.stalled(times, state.best_s):
            break
        retries += 1
        time.sleep(STALL_PAUSE_S)
    state.best_s = min(state.best_s, statistics.median(times))
    return times, extra, retries


def op_release(state, req):
    state.drop()
    return {}


def op_numerics(state, req):
    """The row's numerical error against float64 on formula inputs, computed once in
    this process outside any timed block (probe.numerics); {} for rows without one."""
    bench = registry.REGISTRY[req["bench"]]
    with pinned_threads(state.torch, req.get("params", {})):
        return {"numerics": numerics_more.for_row(state.torch, bench, req.get("params", {}))}


def op_profile(state, req):
    """Profile one mini-model workload per operator (see probe.profile)."""
    return profile.profile_workload(
        state.torch, req["workload"], req.get("budget_s", profile.DEFAULT_BUDGET_S),
        req.get("max_iterations", profile.MAX_ITERATIONS))


OPS = {"facts": op_facts, "availability": op_availability, "prepare": op_prepare,
       "run": op_run, "release": op_release, "profile": op_profile, "numerics": op_numerics,
       "kernels": op_kernels}


def serve(state, requests, send):
    """Answer requests until "quit" or end of input; the prepared benchmark is dropped
    (closed) at the end."""
    try:
        _serve(state, requests, send)
    finally:
        state.drop()


def _serve(state, requests, send):
    for line in requests:
        if not line.strip():
            continue
        req = json.loads(line)
        if req.get("op") == "quit":
            send({"ok": True})
            return
        try:
            reply = OPS[req["op"]](state, req)
            reply["ok"] = True
        except Exception as exc:  # noqa: BLE001 -- reported to the host, worker carries on
            reply = {"ok": False, "exc_type": type(exc).__name__, "message": str(exc)}
        send(reply)


#: A trial's CPU affinity for this worker ("0-15"), applied before torch is imported so
#: that OpenMP sizes its pool to it (eb_torchperf.difftrials).
AFFINITY_VAR = "EBTP_AFFINITY"


def apply_affinity(cpulist):
    """Set this process's CPU affinity to `cpulist` ("0-3,8"); None/"" leaves it.
    Cores the kernel refuses (outside the cgroup's cpuset) make it keep its mask."""
    if not cpulist or not hasattr(os, "sched_setaffinity"):
        return
    try:
        os.sched_setaffinity(0, facts_more.parse_cpulist(cpulist))
    except (OSError, ValueError) as exc:
        print("ebtp_probe: cannot set affinity %s: %s" % (cpulist, exc), file=sys.stderr)


def import_torch(send):
    """torch, with the benchmark suites loaded; None after sending the import failure
    (any exception of `import torch` is the finding) through `send`."""
    try:
        import torch
    except BaseException as exc:  # noqa: BLE001 -- any import failure is the finding
        send({"ok": False, "stage": "import torch", "exc_type": type(exc).__name__,
              "message": str(exc).splitlines()[0] if str(exc) else ""})
        return None
    registry.load_suites()
    return torch


def main(reply_fd):
    """Import torch, say hello, serve.  Returns the process exit status."""
    out = os.fdopen(reply_fd, "w", buffering=1)

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    apply_affinity(os.environ.get(AFFINITY_VAR))
    allocator.configure()  # before torch allocates anything; the same on both sides
    torch = import_torch(send)
    if torch is None:
        return 3
    send({"ok": True, "hello": {"torch_version": torch.__version__, "pid": os.getpid(),
                                "executable": sys.executable}})
    serve(WorkerState(torch), sys.stdin, send)
    return 0
