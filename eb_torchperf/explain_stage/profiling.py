"""Profile target and reference per operator, and run remedy trials: the processes.

Each workload of `probe.profile.WORKLOADS` runs under `torch.profiler` in one target and
one reference worker, alternately (A B, then B A, so neither side always follows the
other), pooled per side and aligned per operator (`analysis.profile_diff`).  Each remedy
trial is an AuditRun restricted to the remedy's benchmarks, with the remedy's
environment in a fresh target worker only, interleaved with the reference like the audit.
"""

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from eb_torchperf.analysis.profile_diff import (PROFILE_AGREEMENT, ProfileDiff,
                                               WorkloadProfile, diff_profiles)
from eb_torchperf.explain_stage import difftrials
from eb_torchperf.explain_stage.trials import TrialResult, summarize_trial
from eb_torchperf.errors import ProbeError
from eb_torchperf.measure.interleave import AuditRun, RunnerOptions
from eb_torchperf.measure.isolation import reference_overrides
from eb_torchperf.measure.runner import DEFAULT_START_TIMEOUT_S, ProbeBundle, Worker, failure
from eb_torchperf.workflows.analyse import compare_trial
from eb_torchperf.probe import registry
from eb_torchperf.probe.profile import (DEFAULT_BUDGET_S, DEFAULT_ROUNDS, DEFAULT_WORKLOADS,
                                        MAX_ITERATIONS, WORKLOADS)
from eb_torchperf.records.measurements import AuditResult


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    """How to profile.

    Attributes:
        rounds: profile requests per side and workload, alternating A B / B A; from
            profile_diff.MEDIAN_POOLING on, pooled by their median per operator.
        budget_s: profiled seconds per request (at least one step).
        max_iterations: profiled steps per request at most.
        request_timeout_s: a silent worker is taken as hung and killed.
        start_timeout_s: deadline for `import torch` in a worker.
    """

    rounds: int = DEFAULT_ROUNDS
    budget_s: float = DEFAULT_BUDGET_S
    max_iterations: int = MAX_ITERATIONS
    request_timeout_s: float = 300.0
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S

    def __post_init__(self):
        if self.rounds < 1 or self.max_iterations < 1 or self.budget_s <= 0:
            raise ValueError("rounds and max_iterations must be >= 1 and budget_s > 0")


def _profile_rounds(workers: Dict[str, Worker], workload: str, options: ProfileOptions,
                    progress: Callable, replies: Dict[str, List[dict]], first: int) -> None:
    """Append `options.rounds` rounds of profile replies per side to `replies`, from
    round index `first` on (A B, B A, ... alternating across calls)."""
    for round_ in range(first, first + options.rounds):
        order = ("target", "reference") if round_ % 2 == 0 else ("reference", "target")
        for side in order:
            progress("profile", workload=workload, side=side, round=round_)
            reply = workers[side].request("profile", options.request_timeout_s,
                                          workload=workload, budget_s=options.budget_s,
                                          max_iterations=options.max_iterations)
            if not reply.get("ok"):
                raise ProbeError("%s: profile %s failed: %s" % (side, workload, failure(reply)))
            replies[side].append(reply)


def _profile_one(workers: Dict[str, Worker], workload: str, options: ProfileOptions,
                 progress: Callable, measured: Optional[float] = None) -> ProfileDiff:
    """Profile one workload; where the audit measured it (`measured`, its relative OPS)
    and the profile's own relative OPS is off it by more than PROFILE_AGREEMENT,
    profile `options.rounds` more rounds once and pool them all (median pooling)."""
    replies: Dict[str, List[dict]] = {"target": [], "reference": []}

    def pooled() -> ProfileDiff:
        return diff_profiles(WorkloadProfile.from_replies("target", replies["target"]),
                             WorkloadProfile.from_replies("reference", replies["reference"]))

    _profile_rounds(workers, workload, options, progress, replies, 0)
    diff = pooled()
    factor = diff.disagreement(measured)
    if factor is not None and factor > PROFILE_AGREEMENT:
        progress("profile_again", workload=workload, profiled=diff.relative_ops,
                 measured=measured, factor=factor)
        _profile_rounds(workers, workload, options, progress, replies, options.rounds)
        diff = pooled()
    return diff


def run_profiles(target: str, reference: str, workloads: Sequence[str] = DEFAULT_WORKLOADS,
                 options: ProfileOptions = ProfileOptions(),
                 progress: Optional[Callable] = None, target_env=None, reference_env=None,
                 measured: Optional[Dict[str, float]] = None
                 ) -> Tuple[List[ProfileDiff], List[dict]]:
    """Profile `workloads` in one target and one reference worker.

    `measured`: workload -> the audit's relative OPS of it (the models suite's rows
    are workloads too); a workload whose profile disagrees with it is profiled again
    (_profile_one), so the profile that weights the model's prediction is the step
    the audit timed.

    `target_env` / `reference_env` are the baseline audit's environment overrides per
    side (audit --target-env; options "target_env" / "reference_env" of its results),
    so the profiles compare what the audit measured.

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
        # the reference without the target's Python path settings, as in the audit
        envs = {"target": dict(target_env) if target_env else None,
                "reference": reference_overrides(reference_env)}
        workers = {label: Worker(python, bundle.path, label, envs[label], options.start_timeout_s)
                   for label, python in (("target", target), ("reference", reference))}
        try:
            for worker in workers.values():
                worker.start()
            for workload in workloads:
                try:
                    diffs.append(_profile_one(workers, workload, options, progress,
                                           (measured or {}).get(workload)))
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


def run_trials(baseline: AuditResult, before: Sequence, trials, options: RunnerOptions,
               progress: Optional[Callable] = None) -> List[TrialResult]:
    """Run each planned Trial as an AuditRun of its benchmarks with its target env.

    Args:
        baseline: the audit whose interpreters, suite and probes are reused.
        before: its comparisons (records.analysis.Analysis.comparisons), the "before".
        trials: trials.Trial list (trials.plan_trials).
        options: runner settings of the trials (usually the suite's with pairs=1).
        progress: callable(event, **info), also receives the AuditRun events.
    """
    progress = progress or (lambda event, **info: None)
    results = []
    for index, trial in enumerate(trials):
        progress("trial", index=index, total=len(trials), label=trial.label)
        # the baseline's own overrides (audit --target-env) stay, the trial's come on top
        env = dict(baseline.options.get("target_env") or {}, **trial.env)
        devices = tuple(sorted({registry.REGISTRY[b].device for b in trial.benches
                                if b in registry.load_suites()})) or ("cpu",)
        run = AuditRun(baseline.target.python, baseline.reference.python, baseline.suite,
                       options, only=list(trial.benches), devices=devices, progress=progress,
                       target_env=env, reference_env=baseline.options.get("reference_env"))
        measured = run.run()
        results.append(difftrials.with_first_call(
            summarize_trial(trial, before, measured, compare_trial(measured)), baseline))
    return results
