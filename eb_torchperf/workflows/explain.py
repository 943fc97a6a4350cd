"""Explain a measured gap: per-operator profile diff, and remedies tried at run time.

Runs after a baseline audit (an AuditResult of target vs reference):

1. **Profile**: each workload of `probe.profile.WORKLOADS` runs under `torch.profiler`
   in one target and one reference worker, alternately (A B, then B A, so neither side
   always follows the other), pooled per side and aligned per operator
   (`profile_diff.diff_profiles`).
2. **Remedy trials**: `trials.plan_trials` picks the run-time remedies the target's
   probe calls for; each trial is an AuditRun restricted to the remedy's benchmarks,
   with the remedy's environment in a fresh target worker only, interleaved with the
   reference like the audit.
3. One `ExplainResult` document (own schema version) beside the audit's results JSON.

Schema history (EXPLAIN_SCHEMA_VERSION):
  1 (2026-11-30): first version: profiles (raw per side + derived diff), trials (plan,
    effect evidence, rows before/after, raw trial AuditResult), skipped remedies,
    rebuild list, errors.
"""

import dataclasses
import datetime
import pathlib
import socket
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from eb_torchperf import __version__
from eb_torchperf.measure.interleave import AuditRun, RunnerOptions
from eb_torchperf.analysis.compare import compare
from eb_torchperf.errors import ConfigError, ProbeError, SchemaError
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import AuditResult, load_document, save_document
from eb_torchperf.probe.profile import DEFAULT_BUDGET_S, MAX_ITERATIONS, WORKLOADS
from eb_torchperf.analysis.profile_diff import (MIN_SHARE, RULE_BACKENDS, ProfileDiff, WorkloadProfile,
                           combine_diffs, diff_profiles)
from eb_torchperf.diagnosis.remedies import BlasHost, discover_host
from eb_torchperf.measure.runner import DEFAULT_START_TIMEOUT_S, ProbeBundle, Worker
from eb_torchperf.diagnosis.trials import TrialResult, plan_trials, rebuild_needed, summarize_trial

EXPLAIN_SCHEMA_VERSION = 1
KIND = "eb_torchperf-explain"


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    """How to profile.

    Attributes:
        rounds: profile requests per side and workload, alternating A B / B A.
        budget_s: profiled seconds per request (at least one step).
        max_iterations: profiled steps per request at most.
        request_timeout_s: a silent worker is taken as hung and killed.
        start_timeout_s: deadline for `import torch` in a worker.
    """

    rounds: int = 2
    budget_s: float = DEFAULT_BUDGET_S
    max_iterations: int = MAX_ITERATIONS
    request_timeout_s: float = 300.0
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S

    def __post_init__(self):
        if self.rounds < 1 or self.max_iterations < 1 or self.budget_s <= 0:
            raise ValueError("rounds and max_iterations must be >= 1 and budget_s > 0")


def _profile_one(workers: Dict[str, Worker], workload: str, options: ProfileOptions,
                 progress: Callable) -> ProfileDiff:
    replies: Dict[str, List[dict]] = {"target": [], "reference": []}
    for round_ in range(options.rounds):
        order = ("target", "reference") if round_ % 2 == 0 else ("reference", "target")
        for side in order:
            progress("profile", workload=workload, side=side, round=round_)
            reply = workers[side].request("profile", options.request_timeout_s,
                                          workload=workload, budget_s=options.budget_s,
                                          max_iterations=options.max_iterations)
            if not reply.get("ok"):
                raise ProbeError("%s: profile %s failed: %s: %s" % (
                    side, workload, reply.get("exc_type"), reply.get("message")))
            replies[side].append(reply)
    return diff_profiles(WorkloadProfile.from_replies("target", replies["target"]),
                         WorkloadProfile.from_replies("reference", replies["reference"]))


def run_profiles(target: str, reference: str, workloads: Sequence[str] = tuple(WORKLOADS),
                 options: ProfileOptions = ProfileOptions(),
                 progress: Optional[Callable] = None) -> Tuple[List[ProfileDiff], List[dict]]:
    """Profile `workloads` in one target and one reference worker.

    Returns:
        (one ProfileDiff per workload profiled, errors as {stage, workload, message});
        a workload that fails is recorded and the next one runs; a worker that dies or
        hangs ends the profiling with what was done.

    Raises:
        ValueError: unknown workload name (before any process starts).
    """
    unknown = sorted(set(workloads) - set(WORKLOADS))
    if unknown:
        raise ValueError("unknown workload(s): %s (known: %s)"
                         % (", ".join(unknown), ", ".join(WORKLOADS)))
    progress = progress or (lambda event, **info: None)
    diffs: List[ProfileDiff] = []
    errors: List[dict] = []
    with ProbeBundle() as bundle:
        workers = {label: Worker(python, bundle.path, label, None, options.start_timeout_s)
                   for label, python in (("target", target), ("reference", reference))}
        try:
            for worker in workers.values():
                worker.start()
            for workload in workloads:
                try:
                    diffs.append(_profile_one(workers, workload, options, progress))
                except ProbeError as exc:
                    errors.append({"stage": "profile", "workload": workload, "message": str(exc)})
                    if any(w.proc.poll() is not None for w in workers.values()):
                        break
        except ProbeError as exc:
            errors.append({"stage": "profile", "workload": None, "message": str(exc)})
        finally:
            for worker in workers.values():
                worker.close()
    return diffs, errors


def run_trials(baseline: AuditResult, trials, options: RunnerOptions,
               progress: Optional[Callable] = None) -> List[TrialResult]:
    """Run each planned Trial as an AuditRun of its benchmarks with its target env.

    Args:
        baseline: the audit whose comparisons are the "before" and whose interpreters,
            suite and probes are reused.
        trials: trials.Trial list (trials.plan_trials).
        options: runner settings of the trials (usually the suite's with pairs=1).
        progress: callable(event, **info), also receives the AuditRun events.
    """
    progress = progress or (lambda event, **info: None)
    before = compare(baseline)
    results = []
    for index, trial in enumerate(trials):
        progress("trial", index=index, total=len(trials), label=trial.label)
        run = AuditRun(baseline.target.python, baseline.reference.python, baseline.suite,
                       options, only=list(trial.benches), progress=progress,
                       target_env=trial.env)
        results.append(summarize_trial(trial, before, run.run()))
    return results


@dataclasses.dataclass(frozen=True)
class ExplainResult:
    """Everything `explain` produced for one baseline audit.

    Attributes:
        target, reference: interpreter paths (from the baseline).
        results_file: path of the baseline audit's results JSON, if saved.
        profiles: one ProfileDiff per workload.
        trials: one TrialResult per remedy trial run.
        skipped: {remedy_id, rule_id, reason} for applicable remedies not tried.
        rebuild: {rule_id, why} for what run-time remedies cannot fix (trials.rebuild_needed).
        errors: {stage, workload, message} of profiling failures.
        wall_s: seconds for profiling and trials; profile_s: of which profiling.
        created_utc: ISO 8601 start time.
    """

    target: str
    reference: str
    results_file: Optional[str] = None
    profiles: Tuple[ProfileDiff, ...] = ()
    trials: Tuple[TrialResult, ...] = ()
    skipped: Tuple[dict, ...] = ()
    rebuild: Tuple[dict, ...] = ()
    errors: Tuple[dict, ...] = ()
    wall_s: float = 0.0
    profile_s: float = 0.0
    created_utc: str = ""
    host: str = ""
    tool_version: str = __version__

    @property
    def overall(self) -> Optional[ProfileDiff]:
        """The profiles summed over one step of each workload, None without profiles."""
        return combine_diffs(self.profiles) if self.profiles else None

    def to_json(self) -> dict:
        overall = self.overall
        return {"schema_version": EXPLAIN_SCHEMA_VERSION, "kind": KIND,
                "tool_version": self.tool_version, "created_utc": self.created_utc,
                "host": self.host, "wall_s": self.wall_s, "profile_s": self.profile_s,
                "target": self.target,
                "reference": self.reference, "results_file": self.results_file,
                "profiles": [p.to_json() for p in self.profiles],
                "overall": overall.to_json() if overall else None,
                "trials": [t.to_json() for t in self.trials], "skipped": list(self.skipped),
                "rebuild": list(self.rebuild), "errors": list(self.errors)}

    @classmethod
    def from_json(cls, data: dict) -> "ExplainResult":
        """Load an explain document ("overall" and derived rows are recomputed).

        Raises:
            SchemaError: not an explain document, unknown schema version, malformed.
        """
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise SchemaError("not an eb_torchperf explain document (kind is not %r)" % KIND)
        if data.get("schema_version") != EXPLAIN_SCHEMA_VERSION:
            raise SchemaError("explain schema version %r is not supported (this eb_torchperf "
                              "reads version %d); re-run explain or upgrade eb_torchperf"
                              % (data.get("schema_version"), EXPLAIN_SCHEMA_VERSION))
        try:
            return cls(
                target=data["target"], reference=data["reference"],
                results_file=data.get("results_file"),
                profiles=tuple(ProfileDiff.from_json(p) for p in data.get("profiles", ())),
                trials=tuple(TrialResult.from_json(t) for t in data.get("trials", ())),
                skipped=tuple(data.get("skipped", ())), rebuild=tuple(data.get("rebuild", ())),
                errors=tuple(data.get("errors", ())), wall_s=float(data.get("wall_s", 0.0)),
                profile_s=float(data.get("profile_s", 0.0)),
                created_utc=data.get("created_utc", ""), host=data.get("host", ""),
                tool_version=data.get("tool_version", ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError("malformed explain document: %s: %s"
                              % (type(exc).__name__, exc)) from None

    def save(self, path) -> None:
        """Write the JSON document to `path` (parent folders are created)."""
        save_document(path, self.to_json())


def profile_evidence(diff: ProfileDiff, backend: str) -> Dict[str, object]:
    """Evidence for a Finding: how much of `diff`'s gap backend `backend` holds.

    Values, as the rules' evidence (records.findings.quantity), e.g.
    {"profile: BLAS or oneDNN (GEMM), share of the gap": quantity(0.98, "fraction"),
    "profile: BLAS or oneDNN (GEMM), self CPU per step": quantity(3.95, "s",
    reference=0.046, workload="all workloads"), "profile: largest operator": "aten::addmm",
    "profile: largest operator, share of the gap": quantity(0.96, "fraction"), ...}.

    Args:
        diff: a profile diff (usually ExplainResult.overall).
        backend: profile_diff.Backend key.

    Returns:
        {} when no operator of that backend ran; the largest operator only when the
        backend holds part of the gap and the operator at least MIN_SHARE of it.  The
        share is None when the target is not slower overall, <= 0 when it is not
        slower in this backend.
    """
    share = diff.backend(backend)
    if share is None:
        return {}
    head = "profile: %s" % share.title
    evidence = {head + ", share of the gap": quantity(share.share, "fraction"),
                head + ", self CPU per step": quantity(share.target_s, "s",
                                                       reference=share.reference_s),
                head + ", workload": diff.workload}
    top = next(d for d in diff.ops if d.backend == backend)
    if share.share is not None and share.share > 0 and (top.share or 0) >= MIN_SHARE:
        evidence["profile: largest operator"] = top.op
        evidence["profile: largest operator, share of the gap"] = quantity(top.share, "fraction")
        evidence["profile: largest operator, per step"] = quantity(
            top.target_s, "s", reference=top.reference_s)
    return evidence


def annotate_findings(findings: Sequence[Finding], diff: Optional[ProfileDiff],
                      rule_backends: Dict[str, str] = RULE_BACKENDS) -> Tuple[Finding, ...]:
    """Add the profile's evidence (profile_evidence) to findings whose rule maps to a backend.

    E.g. a "blas-not-mkl" finding gains "aten::addmm accounts for 96 % of the gap".

    Args:
        findings: diagnosis findings (unchanged when no diff or no matching rule).
        diff: usually ExplainResult.overall.
        rule_backends: diagnosis rule id -> profile_diff.Backend key.
    """
    if diff is None:
        return tuple(findings)
    out = []
    for finding in findings:
        backend = rule_backends.get(finding.rule_id)
        extra = profile_evidence(diff, backend) if backend else {}
        out.append(dataclasses.replace(finding, evidence=dict(finding.evidence, **extra))
                   if extra else finding)
    return tuple(out)


def with_profile_evidence(result: AuditResult, explained: Optional[ExplainResult]
                          ) -> AuditResult:
    """A copy of `result` whose findings carry the profile evidence of `explained`
    (annotate_findings over its overall diff); `result` itself when explained is None."""
    if explained is None:
        return result
    return dataclasses.replace(result, findings=annotate_findings(result.findings,
                                                                  explained.overall))


def explain_path(results_path) -> str:
    """Where the explain document of a results JSON lives: <stem>.explain.json beside it."""
    text = str(results_path)
    stem = text[:-5] if text.endswith(".json") else text
    return stem + ".explain.json"


def find_explain(results_path) -> Optional[ExplainResult]:
    """The explain document beside a results JSON (explain_path), None when there is none.

    Raises:
        SchemaError: the file exists but is not a readable explain document.
    """
    path = explain_path(results_path)
    return load_explain(path) if pathlib.Path(path).is_file() else None


def stale_reason(explained: ExplainResult, result) -> Optional[str]:
    """Why an explain document found beside a results file is not about that audit
    (another target or reference interpreter, or started before the audit was), None
    when it fits.  An audit re-run into the same --out path leaves the old one there."""
    target = result.target.python if result.target else None
    reference = result.reference.python if result.reference else None
    if (explained.target, explained.reference) != (target, reference):
        return "it explains %s against %s, this audit %s against %s" % (
            explained.target, explained.reference, target, reference)
    if explained.created_utc and result.created_utc and explained.created_utc < result.created_utc:
        return "it was made at %s, before this audit (%s)" % (explained.created_utc,
                                                              result.created_utc)
    return None


def load_explain(path) -> ExplainResult:
    """Read an explain JSON file.

    Raises:
        SchemaError: unreadable, not JSON, or not an explain document (names the path).
    """
    return load_document(path, ExplainResult.from_json)


def _try_remedies(baseline: AuditResult, host: Optional[BlasHost],
                  options: Optional[RunnerOptions], progress: Optional[Callable]
                  ) -> Tuple[List[TrialResult], List[dict]]:
    """Plan the trials from the baseline's target probe and run them."""
    measured = sorted({r.bench for r in baseline.results})
    trials, skipped = plan_trials(baseline.target, host or discover_host(baseline.target),
                                  measured=measured)
    options = options or RunnerOptions(**dict(baseline.options, pairs=1))
    return run_trials(baseline, trials, options, progress), skipped


def explain(baseline: AuditResult, results_file: Optional[str] = None,
            workloads: Sequence[str] = tuple(WORKLOADS),
            profile_options: ProfileOptions = ProfileOptions(),
            trial_options: Optional[RunnerOptions] = None, try_remedies: bool = True,
            host: Optional[BlasHost] = None, progress: Optional[Callable] = None
            ) -> ExplainResult:
    """Profile both sides and try the run-time remedies the target's probe calls for.

    Args:
        baseline: a complete-enough audit with a target and a reference probe, and its
            findings (diagnose.with_findings): a finding no trial addresses is listed as
            needing a rebuild (trials.rebuild_needed).
        results_file: where the baseline was saved (recorded in the document).
        workloads: probe.profile.WORKLOADS names to profile (empty: no profiling).
        trial_options: runner settings of the trials (default: baseline's, 1 pair).
        try_remedies: run the remedy trials (without them the rebuild list stays empty:
            nothing was tried, so nothing is judged).
        host: BLAS alternatives (default: remedies.discover_host on this machine).
        progress: callable(event, **info).

    Raises:
        ConfigError: the baseline has no reference or no target probe.
        ValueError: unknown workload name.
    """
    if baseline.target is None or baseline.reference is None:
        raise ConfigError("explain needs a baseline audit with a target and a reference "
                          "probe (give --reference; --reference none cannot be explained)")
    started = time.monotonic()
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    profiles, errors = run_profiles(baseline.target.python, baseline.reference.python,
                                    workloads, profile_options, progress) if workloads else ([], [])
    profile_s = time.monotonic() - started
    results, skipped, rebuild = [], [], []
    if try_remedies:
        results, skipped = _try_remedies(baseline, host, trial_options, progress)
        rebuild = rebuild_needed(results, [f.rule_id for f in baseline.findings])
    return ExplainResult(
        baseline.target.python, baseline.reference.python, results_file, tuple(profiles),
        tuple(results), tuple(skipped), tuple(rebuild), tuple(errors),
        time.monotonic() - started, profile_s, created, socket.gethostname())
