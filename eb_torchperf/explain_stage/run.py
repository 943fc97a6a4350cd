"""Explain a measured gap: per-operator profile diff, and remedies tried at run time.

Runs after a baseline audit (an AuditResult of target vs reference):

1. **Profile**: each workload of `probe.profile.WORKLOADS` runs under `torch.profiler`
   in one target and one reference worker, alternately (A B, then B A, so neither side
   always follows the other), pooled per side and aligned per operator
   (`profile_diff.diff_profiles`); a model the audit measured is profiled again when
   the profile's own relative OPS is off the audit's (profile_diff.PROFILE_AGREEMENT).
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
import socket
import time
from typing import Callable, List, Optional, Sequence, Tuple

from eb_torchperf.explain_stage.explanation import (  # noqa: F401  (the explain API in one place)
    EXPLAIN_SCHEMA_VERSION, ExplainResult, annotate_findings, explain_path, find_explain,
    load_explain, profile_evidence, stale_reason, with_profile_evidence)
from eb_torchperf.explain_stage import difftrials
from eb_torchperf.explain_stage.remedies import BlasHost, discover_host
from eb_torchperf.explain_stage.trials import TrialResult, plan_trials, rebuild_needed
from eb_torchperf.errors import ConfigError
from eb_torchperf.measure.interleave import RunnerOptions
from eb_torchperf.probe.profile import DEFAULT_WORKLOADS, MODEL_WORKLOADS, WORKLOADS  # noqa: F401
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.explain_stage.profiling import ProfileOptions, run_profiles, run_trials  # noqa: F401


def _try_remedies(baseline: AuditResult, analysis: Analysis, host: Optional[BlasHost],
                  options: Optional[RunnerOptions], progress: Optional[Callable]
                  ) -> Tuple[List[TrialResult], List[dict]]:
    """Plan the trials from the baseline's target probe and its analysis' differences,
    and run them (the analysis' comparisons are the "before")."""
    measured = sorted({r.bench for r in baseline.results})
    trials, skipped = plan_trials(baseline.target, host or discover_host(baseline.target),
                                  measured=measured)
    extra, not_changeable = difftrials.plan_difference_trials(baseline, analysis.differences)
    trials, skipped = trials + extra, skipped + not_changeable
    fields = {f.name for f in dataclasses.fields(RunnerOptions)}
    one_pair = dict(baseline.options, pairs=1, max_pairs=1)  # trials: one pair, no extra
    options = options or RunnerOptions(**{k: v for k, v in one_pair.items() if k in fields})
    # a baseline that was an A/A (or --target-env A/B) of one build stays one for its trials
    same = bool(baseline.options.get("allow_same_torch"))
    options = dataclasses.replace(options, allow_same_torch=options.allow_same_torch or same)
    return run_trials(baseline, analysis.comparisons, trials, options, progress), skipped


def explain(baseline: AuditResult, analysis: Analysis, results_file: Optional[str] = None,
            workloads: Sequence[str] = DEFAULT_WORKLOADS,
            profile_options: ProfileOptions = ProfileOptions(),
            trial_options: Optional[RunnerOptions] = None, try_remedies: bool = True,
            host: Optional[BlasHost] = None, progress: Optional[Callable] = None
            ) -> ExplainResult:
    """Profile both sides and try the run-time remedies the target's probe calls for.

    Args:
        baseline: a complete-enough audit with a target and a reference probe, and its
            findings: a finding no trial addresses is listed as needing a rebuild
            (trials.rebuild_needed).
        analysis: the pipeline's analysis of `baseline` (records.analysis.Analysis).
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
    # the audit's own figure of each profiled model (a micro workload is not its row's
    # size): a profile that is off it is redone
    measured = {c.bench: c.estimate for c in analysis.comparisons
                if c.bench in workloads and c.bench in MODEL_WORKLOADS and c.estimate}
    profiles, errors = run_profiles(
        baseline.target.python, baseline.reference.python, workloads, profile_options,
        progress, target_env=baseline.options.get("target_env"),
        reference_env=baseline.options.get("reference_env"),
        measured=measured) if workloads else ([], [])
    profile_s = time.monotonic() - started
    results, skipped, rebuild = [], [], []
    if try_remedies:
        results, skipped = _try_remedies(baseline, analysis, host, trial_options, progress)
        rebuild = rebuild_needed(results, [f.rule_id for f in baseline.findings])
    return ExplainResult(
        baseline.target.python, baseline.reference.python, results_file, tuple(profiles),
        tuple(results), tuple(skipped), tuple(rebuild), tuple(errors),
        time.monotonic() - started, profile_s, created, socket.gethostname())
