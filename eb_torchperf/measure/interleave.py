"""Run an audit: target and reference workers measured side by side, A B B A ...

Why short blocks alternate over fresh worker pairs: docs/measurement.md (design facts).
"""

import dataclasses
import datetime
import os
import socket
import time
from typing import Callable, Dict, List, Optional, Tuple

from eb_torchperf.measure import interrupts
from eb_torchperf.errors import ConfigError, ProbeError
from eb_torchperf.measure.isolation import SAME_TORCH_HINT, reference_overrides, same_torch_problem
from eb_torchperf.records.findings import INTERRUPTED, INTERRUPTED_KIND
from eb_torchperf.records.measurements import AuditResult, BenchResult, ProbeResult
from eb_torchperf.probe import registry
from eb_torchperf.measure.options import (  # noqa: F401 -- re-exported (callers' import)
    MIN_AUDIT_BUDGET_S, SUITE_OPTIONS, RunnerOptions, allowed_cores, prepare_together)
from eb_torchperf.measure.extra_pairs import audit_budget_s, extra_plan, failed_rows, row_key
from eb_torchperf.measure.runner import ProbeBundle, Worker, exchange, failure
from eb_torchperf.measure.evidence import row_numerics, with_kernels
from eb_torchperf.measure.zygote import Zygote, worker_conditions
from eb_torchperf.measure import contention as busy
from eb_torchperf.probe import contention as counters


@dataclasses.dataclass
class _Side:
    label: str
    python: str
    env: Optional[dict]
    worker: Optional[Worker] = None
    probe: Optional[ProbeResult] = None
    dead: bool = False
    zygote: Optional[Zygote] = None


class _Failed(Exception):
    """A benchmark request answered ok: false (the benchmark failed, the worker lives)."""

    def __init__(self, side: "_Side", message: str):
        super().__init__(message)
        self.side = side


def _request(side: _Side, op: str, options: RunnerOptions, **fields) -> dict:
    return _request_all([side], op, options, **fields)[0]


def _request_all(sides: List[_Side], op: str, options: RunnerOptions, **fields) -> List[dict]:
    """`op` on every side at once (runner.exchange), the replies in order; _Failed for
    the first side that answered ok: false, once all have answered."""
    replies = exchange([s.worker for s in sides], op, options.request_timeout_s, **fields)
    for side, reply in zip(sides, replies):
        if not reply.get("ok"):
            raise _Failed(side, failure(reply))
    return replies


class AuditRun:
    """State of one audit in progress; `run()` returns the AuditResult.

    Args:
        target: interpreter path of the torch under audit.
        reference: interpreter path of the reference torch, or None (absolute rates).
        suite: "quick" or "full".
        options: RunnerOptions (default: SUITE_OPTIONS[suite]).
        only: restrict to these benchmark names.
        devices: benchmark devices to include ("cpu", "cuda").
        progress: callable(event: str, **info) for progress display.
        target_env, reference_env: environment overrides per side (remedy trials; for
            the reference, applied before its isolation from the target's Python
            path settings unless options.keep_reference_env).
        reference_env_extra: overrides of the reference applied after the isolation
            (`--reference-env VAR=VALUE`).
        worker_factory: callable(python, bundle_dir, label, env, start_timeout_s) -> a
            Worker-like object (tests inject fakes).
        judge: callable(target results, reference results, target_half_width) -> None
            for a decided row, else a sort key (lower: more pairs first); the caller
            passes analysis.compare.needs_more_pairs (this layer does no statistics).
            None: no extra pairs.
    """

    def __init__(self, target: str, reference: Optional[str] = None, suite: str = "quick",
                 options: Optional[RunnerOptions] = None, only=None, devices=("cpu",),
                 progress: Optional[Callable] = None, target_env=None, reference_env=None,
                 worker_factory: Callable = Worker, reference_env_extra=None,
                 judge: Optional[Callable] = None):
        self.plan = registry.plan(suite, devices, only, cores=allowed_cores())
        self.suite = suite
        self.options = options or SUITE_OPTIONS[suite]
        self.sides = [_Side("target", target, target_env)]
        if reference:
            self.sides.append(_Side("reference", reference, reference_overrides(
                reference_env, reference_env_extra, keep=self.options.keep_reference_env)))
        self.progress = progress or (lambda event, **info: None)
        self.worker_factory = worker_factory
        self.judge = judge
        #: fork from zygotes: only with real workers (tests inject fakes)
        self.fork = self.options.fork and worker_factory is Worker
        self.modes: Dict[str, str] = {}  # side label -> "fork" | "spawn" (+ why)
        self._waited: Dict[str, object] = {}  # measure.contention.wait_idle's answer
        self.results: List[BenchResult] = []
        self.skipped: List[dict] = []
        self.errors: List[dict] = []
        #: wall seconds of one pair: per benchmark key, and of starting the workers
        self._cost: Dict[Tuple[str, str], float] = {}
        self._availability: Dict[Tuple[str, str], Optional[str]] = {}  # (side, bench) -> reason
        self._start_cost, self._first_pairs_s = 0.0, 0.0  # ... and of the suite's pairs

    def run(self) -> AuditResult:
        """Measure every planned benchmark over all pairs; never raises ProbeError.

        A worker that dies or hangs, or an interrupt (Ctrl-C; the CLI turns SIGTERM into
        one), ends the audit early (complete=False) with the error recorded; what was
        measured before is kept in the result.

        Raises:
            ConfigError: both sides load the same torch (see isolation.same_torch_problem)
                and options.allow_same_torch is off; raised once the first pair has
                reported its facts, before any benchmark.
        """
        started = time.monotonic()
        created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        complete = True
        pair = 0
        bundle = ProbeBundle()
        try:
            if self.options.wait_idle_s is not None:
                self._waited = busy.wait_idle(self.options.wait_idle_s, self.progress)
            with interrupts.held():
                bundle.__enter__()
            for pair in range(self.options.max_pairs or self.options.pairs):
                plan = self.plan if pair < self.options.pairs else self._extra_plan(started)
                if not plan:
                    break
                try:
                    self._run_pair(bundle.path, pair, plan)
                except ProbeError as exc:
                    self._record_error(exc, pair)
                    complete = False
                    break
                except KeyboardInterrupt:  # a hung worker is killed, not asked to quit
                    self._close_workers(kill=True)
                    raise
                finally:
                    self._close_workers()
        except KeyboardInterrupt:  # at any point, also while the workers shut down
            self._close_workers(kill=True)
            self.errors.append({"side": None, "python": None, "pair": pair,
                                "message": INTERRUPTED, "kind": INTERRUPTED_KIND})
            complete = False
        finally:
            with interrupts.held(raise_after=False) as late:
                self._close_zygotes_now()
                bundle.__exit__(None, None, None)
        if late.interrupted and complete:
            self.errors.append({"side": None, "python": None, "pair": pair,
                                "message": INTERRUPTED, "kind": INTERRUPTED_KIND})
            complete = False
        return self._result(complete, time.monotonic() - started, created)

    def _result(self, complete: bool, wall_s: float, created: str) -> AuditResult:
        by_label = {s.label: s.probe for s in self.sides}
        overrides = {s.label + "_env": dict(s.env) for s in self.sides if s.env}
        return AuditResult(
            suite=self.suite, options=dict(dataclasses.asdict(self.options), **overrides),
            target=by_label.get("target"), reference=by_label.get("reference"),
            results=tuple(self.results), skipped=tuple(self.skipped), errors=tuple(self.errors),
            complete=complete, wall_s=wall_s, created_utc=created,
            host=socket.gethostname(), conditions=self.conditions())

    def _close_zygotes_now(self) -> None:
        for side in [s for s in self.sides if s.zygote is not None]:
            zygote, side.zygote = side.zygote, None
            zygote.close()

    def _close_workers(self, kill: bool = False) -> None:
        """Shut down (or, after an interrupt, kill) the workers of the current pair;
        interrupts are held meanwhile and raised once afterwards (a Ctrl-C or SIGTERM
        during the shutdown, or a second one, cannot skip the rest of it)."""
        with interrupts.held():
            for side in self.sides:
                if side.worker is not None:
                    worker, side.worker = side.worker, None
                    if kill and hasattr(worker, "kill"):  # test fakes may lack kill()
                        worker.kill()
                    worker.close()

    def _record_error(self, exc: ProbeError, pair: int) -> None:
        side = next((s for s in self.sides if exc.command[:1] == (s.python,)), None)
        self.errors.append({"side": side and side.label, "python": side and side.python,
                            "pair": pair, "message": str(exc), "stderr_tail": exc.stderr_tail,
                            "exit_code": exc.exit_code})
        self.progress("error", message=str(exc))

    def _start_workers(self, bundle_dir: str, pair: int) -> None:
        # Odd pairs start the reference first (which process starts first may settle on
        # another core or memory layout); both start before either is waited for, so
        # a pair costs one torch import (issue 16), with zygotes a fork each (issue 26).
        order = self.sides if pair % 2 == 0 else list(reversed(self.sides))
        if self.fork and pair % self.options.zygote_pairs == 0:
            self._start_zygotes(bundle_dir, order)
        for side in order:
            self.progress("start", side=side.label, python=side.python, pair=pair)
            if side.zygote is not None:
                side.worker = side.zygote.fork_worker(side.label)
                continue
            side.worker = self.worker_factory(side.python, bundle_dir, side.label, side.env,
                                              self.options.start_timeout_s)
            if hasattr(side.worker, "spawn"):
                side.worker.spawn()
        for side in order:
            if hasattr(side.worker, "spawn"):
                side.worker.wait_started()
            else:
                side.worker.start()
            if side.probe is None:
                facts = side.worker.request("facts", self.options.request_timeout_s)["facts"]
                side.probe = ProbeResult.from_facts(side.label, side.python, facts)

    def _start_zygotes(self, bundle_dir: str, order: List[_Side]) -> None:
        """Fresh zygotes for every side (imports overlapping); a side whose zygote is
        not fork safe spawns its workers from then on (self.modes says why)."""
        with interrupts.held():
            self._close_zygotes_now()
        for side in order:
            if self.modes.get(side.label, "fork") == "fork":
                side.zygote = Zygote(side.python, bundle_dir, side.label, side.env,
                                     self.options.start_timeout_s)
                side.zygote.spawn()
        for side in order:
            if side.zygote is None:
                continue
            side.zygote.wait_started()
            if side.zygote.fork_safe:
                self.modes[side.label] = "fork"
            else:
                self.modes[side.label] = "spawn: " + side.zygote.reason
                self.progress("spawn", side=side.label, reason=side.zygote.reason)
                side.zygote.close()
                side.zygote = None

    def conditions(self) -> dict:
        """AuditResult.conditions: worker mode, allowed CPUs, host load summary."""
        conditions = worker_conditions([self.modes.get(s.label, "spawn") for s in self.sides],
                                       self.options.zygote_pairs, allowed_cores())
        conditions.update(busy.host_load(r.contention for r in self.results), **self._waited)
        return conditions

    def _extra_plan(self, started: float) -> List[Tuple[str, dict]]:
        """The rows the next extra pair measures (measure.extra_pairs); [] to stop.  The
        budget's clock runs from `started` less the --wait-idle wait."""
        opts = self.options
        if len(self.sides) < 2 or opts.row_budget_s is None or self.judge is None:
            return []
        failed = failed_rows(self.errors)
        elapsed = time.monotonic() - started - self._waited.get("waited_idle_s", 0.0)
        self._first_pairs_s = self._first_pairs_s or elapsed
        budget = audit_budget_s(self.results, lambda bench: opts.row_budget_for(
            registry.REGISTRY[bench].device), opts.min_audit_budget_s, self._first_pairs_s)
        left = budget - elapsed - self._start_cost
        return extra_plan(self.plan, self.results, failed, self._cost, self.judge,
                          opts.target_half_width, left)

    def _run_pair(self, bundle_dir: str, pair: int, plan: List[Tuple[str, dict]]) -> None:
        began = time.monotonic()
        self._start_workers(bundle_dir, pair)
        self._start_cost = max(self._start_cost, time.monotonic() - began)
        if pair == 0 and not self.options.allow_same_torch:
            problem = same_torch_problem(self.sides[0].probe,
                                         self.sides[1].probe if len(self.sides) > 1 else None)
            if problem:
                raise ConfigError("%s: %s" % (problem, SAME_TORCH_HINT))
        extra = pair >= self.options.pairs
        for index, (name, params) in enumerate(plan):
            self.progress("bench", name=name, params=params, pair=pair, index=index,
                          total=len(plan), pairs=self.options.pairs, extra=extra)
            began = time.monotonic()
            runnable = self._available_sides(name, params, pair)
            if runnable:
                self._measure(name, params, pair, runnable)
            key = row_key(name, params)
            self._cost[key] = max(self._cost.get(key, 0.0), time.monotonic() - began)
        if pair == 0:
            self.results = with_kernels(self.results, self.sides, plan,
                                        self.options.request_timeout_s)

    def _available_sides(self, name: str, params: dict, pair: int) -> List[_Side]:
        """The sides that can run `name`, each asked once (the answer is the same in
        every pair; a later worker skips its facts: 0.3-0.4 s a pair on the H200 host)."""
        sides = []
        for side in self.sides:
            if (side.label, name) not in self._availability:
                self._availability[(side.label, name)] = _request(
                    side, "availability", self.options, bench=name)["reason"]
            reason = self._availability[(side.label, name)]
            if reason is None:
                sides.append(side)
            elif pair == 0:
                self.skipped.append({"bench": name, "params": params, "side": side.label,
                                     "reason": reason})
        return sides

    def _measure(self, name: str, params: dict, pair: int, sides: List[_Side]) -> None:
        blocks, extra, load = ({s.label: [] for s in sides}, {s.label: {} for s in sides},
                               {s.label: {} for s in sides})
        numerics = {}
        # Odd pairs mirror the order (A B B A ... from the other side): the first side
        # runs once more, mirroring cancels it.
        ordered = sides if pair % 2 == 0 else list(reversed(sides))
        try:
            numbers = self._prepare(name, ordered, params)
            self._rounds(name, params, ordered, numbers, blocks, extra, load)
            if pair == 0:
                numerics = row_numerics(ordered, name, params, self.options.request_timeout_s)
        except _Failed as exc:
            self.errors.append({"side": exc.side.label, "python": exc.side.python, "pair": pair,
                                "bench": name, "params": params, "message": str(exc)})
            self.progress("bench_failed", name=name, side=exc.side.label, message=str(exc))
            self._release(sides)
            return
        self._release(sides)  # not after an interrupt or a dead worker: they are killed
        amount, unit = registry.REGISTRY[name].work(params)
        for side in sides:
            self.results.append(BenchResult(
                bench=name, params=params, side=side.label, pair=pair,
                number_per_run=numbers[side.label],
                blocks_s=tuple(tuple(b) for b in blocks[side.label]), work=amount, work_unit=unit,
                extra_s={k: tuple(tuple(b) for b in v) for k, v in extra[side.label].items()},
                contention=busy.fractions(load[side.label]),
                numerics=numerics.get(side.label, {})))

    def _prepare(self, name: str, ordered: List[_Side], params: dict) -> Dict[str, int]:
        """{label: calls per sample} of the row prepared on every side: at once where
        options.prepare_together says so, else in turn."""
        opts = self.options
        together = prepare_together(registry.REGISTRY[name].device, opts.pairs)
        preps = [p for group in ([ordered] if together else [[s] for s in ordered])
                 for p in _request_all(group, "prepare", opts, bench=name, params=params,
                                       min_sample_s=opts.min_sample_s)]
        time.sleep(opts.settle_s)
        return {s.label: p["number"] for s, p in zip(ordered, preps)}

    def _release(self, sides: List[_Side]) -> None:
        """Let the live workers free the benchmark's memory before the next one."""
        for other in sides:
            if other.worker.alive():
                other.worker.request("release", self.options.request_timeout_s)

    def _rounds(self, name, params, sides, numbers, blocks, extra, load) -> None:
        opts = self.options
        bench = registry.REGISTRY[name]
        min_rounds = min(opts.min_rounds, bench.min_rounds or opts.min_rounds)
        budget_s = opts.bench_budget_s if bench.budget_s is None else bench.budget_s
        start = time.monotonic()
        rounds = 0
        rotate = opts.rotate_cpus and bench.single_threaded(params)
        # the audit's own processes are not other processes' load (measure.contention)
        pids = {s.label: [os.getpid()] + [p for o in sides if o is not s
                                          for p in [(getattr(o.worker, "hello", None) or {})
                                                    .get("pid")] if p] for s in sides}
        while rounds < opts.max_rounds and (
                rounds < min_rounds or time.monotonic() - start < budget_s):
            order = sides if rounds % 2 == 0 else list(reversed(sides))
            for side in order:
                fields = {"cpu_slot": rounds} if rotate else {}
                reply = _request(side, "run", opts, bench=name, params=params,
                                 number=numbers[side.label], warmup_s=opts.warmup_s,
                                 block_s=opts.block_s, exclude_pids=pids[side.label],
                                 stall_retries=opts.stall_retries,
                                 spread_threads=opts.spread_threads, **fields)
                blocks[side.label].append(reply["times_s"])
                if isinstance(reply.get("contention"), dict):
                    load[side.label] = counters.add(load[side.label], reply["contention"])
                for metric, values in reply.get("extra_s", {}).items():
                    extra[side.label].setdefault(metric, []).append(values)
                time.sleep(opts.settle_s)
            rounds += 1


def run_audit(target: str, reference: Optional[str] = None, suite: str = "quick",
              **kwargs) -> AuditResult:
    """Audit `target` against `reference` (or alone); see AuditRun for the arguments.

    Raises:
        ValueError: unknown suite or benchmark name (before any process starts).
    """
    return AuditRun(target, reference, suite, **kwargs).run()
