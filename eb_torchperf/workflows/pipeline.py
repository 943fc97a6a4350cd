"""The one audit pipeline: validate → measure → analyse → explain → save → report.

Every shell runs its job through here: `audit`, `explain`, `report`, `sanity-check`
and the EasyBuild hook (`workflows.sitecheck`), `compare` (`workflows.stored`), the
fleet gathering, `gpu` and the ReFrame check (`analyse`), and the public API
(`eb_torchperf.audit`).  `run(request)` validates the whole `AuditRequest` before any
process starts (`workflows.request.validate`), then calls the steps in order and
returns one `PipelineOutcome`.  Nothing here prints: progress and log lines go to the
callables of `Display`, which the CLI fills with its rich displays.
"""

import dataclasses
import os
import pathlib
import signal
from contextlib import contextmanager, nullcontext
from typing import Callable, Dict, Optional, Sequence, Tuple

from eb_torchperf.present.analysis_doc import analysis as analysis_section
from eb_torchperf.analysis.compare import Comparison, needs_more_pairs
from eb_torchperf.measure import interrupts
from eb_torchperf.errors import ConfigError
from eb_torchperf.records import safe_write
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.findings import COMPLETE, EXIT_INTERRUPTED, exit_status
from eb_torchperf.records.measurements import AuditResult, load_results
from eb_torchperf.workflows.analyse import analyse
from eb_torchperf.workflows.request import AuditRequest, Plan, runner_options, validate

__all__ = ["Analysis", "AuditRequest", "Display", "PipelineOutcome", "analyse", "explain_step",
           "measure", "run", "save", "status_of", "validate", "with_baseline",
           "write_reports"]


def _silent(*args, **kwargs) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Display:
    """Where the pipeline reports while it runs (the defaults say nothing).

    Attributes:
        log: one line of news (reference venv creation, an explain file ignored).
        audit_progress: total events -> a context manager that is a progress callable
            (`callable(event, **info)`), e.g. present.terminal.AuditProgress.
        explain_progress: () -> the same for the explain step (ExplainProgress).
    """

    log: Callable[[str], None] = _silent
    audit_progress: Optional[Callable] = None
    explain_progress: Optional[Callable] = None


@dataclasses.dataclass(frozen=True)
class PipelineOutcome:
    """What one pipeline run produced.

    Attributes:
        result: the audit, findings attached (with the profile evidence when explained).
        analysis: what the pipeline computed once (records.analysis.Analysis).
        explained: the explain document, None without an explain step.
        results_path, explain_path: files saved ("" when none).
        written: report format -> path.
        status: exit status (records.findings.exit_status: 0, 1, 2 or 130).
    """

    result: AuditResult
    analysis: Analysis
    explained: object = None
    results_path: str = ""
    explain_path: str = ""
    written: Dict[str, pathlib.Path] = dataclasses.field(default_factory=dict)
    status: int = 0

    @property
    def comparisons(self) -> Tuple[Comparison, ...]:
        """Relative OPS per benchmark (the analysis' comparisons)."""
        return self.analysis.comparisons


def with_baseline(result: AuditResult, baseline: AuditResult) -> AuditResult:
    """`result` (audited alone) with a stored run's target side as its reference.

    Raises:
        ConfigError: the stored run has no target probe.
    """
    if baseline.target is None:
        raise ConfigError("the baseline results have no target side to compare against")
    reference = dataclasses.replace(baseline.target, label="reference")
    measured = tuple(dataclasses.replace(r, side="reference")
                     for r in baseline.results_for("target"))
    return dataclasses.replace(result, reference=reference, results=result.results + measured)


@contextmanager
def _sigterm_as_interrupt(active: bool):
    """SIGTERM (Slurm's scancel and time limit), SIGHUP (a dropped ssh session) and
    SIGQUIT (Ctrl-\\) handled like Ctrl-C inside the block: the audit stops, and what
    was measured is returned and written."""
    if not active:
        yield
        return
    others = [s for s in interrupts.STOP_SIGNALS if s != signal.SIGINT]
    previous = {s: signal.signal(s, interrupts.raise_interrupt) for s in others}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def measure(plan: Plan, display: Display = Display()) -> AuditResult:
    """Load the stored audit, or resolve both interpreters and run the audit.

    Raises:
        ConfigError: the target or reference cannot be resolved (venv/pip failure).
        SchemaError: unreadable stored results or baseline.
    """
    request = plan.request
    if request.results is not None:
        return load_results(request.results)
    with _sigterm_as_interrupt(request.stop_on_sigterm):
        return _measure(plan, display)


def _measure(plan: Plan, display: Display) -> AuditResult:
    from eb_torchperf.measure.interleave import AuditRun
    from eb_torchperf.measure.reference import resolve_interpreter, resolve_reference
    request = plan.request
    baseline = (load_results(os.path.expanduser(request.baseline))
                if request.baseline is not None else None)
    target = resolve_interpreter(request.target or "python3", "target")
    reference = None if baseline is not None else resolve_reference(
        request.reference_spec, target, request.pip_options,
        request.cache_dir and pathlib.Path(request.cache_dir), log=display.log,
        timeout_s=plan.options.start_timeout_s, env=plan.reference_extra,
        target_env=plan.target_env)
    try:
        audit = AuditRun(target, reference, request.suite, plan.options,
                         only=list(request.only) or None, devices=tuple(request.devices),
                         target_env=dict(plan.target_env), reference_env=request.reference_env,
                         reference_env_extra=dict(plan.reference_extra),
                         judge=needs_more_pairs)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if display.audit_progress:
        audit.progress = display.audit_progress(len(audit.plan) * audit.options.pairs)
        with audit.progress:
            result = audit.run()
    else:
        result = audit.run()
    return with_baseline(result, baseline) if baseline is not None else result


def _explain_path(plan: Plan, results_path: str) -> str:
    """ExplainOptions.out, else <stem>.explain.json beside the results ("": no file)."""
    from eb_torchperf.explain_stage.explanation import explain_path
    if plan.request.explain is not None and plan.request.explain.out:
        return plan.request.explain.out
    return explain_path(results_path) if results_path else ""


def _default_workloads(result: AuditResult, micro: Sequence[str], models: Sequence[str]):
    """The micro workloads, then the models suite's CPU rows this audit measured."""
    return tuple(micro) + tuple(dict.fromkeys(r.bench for r in result.results
                                              if r.bench in models))


def explain_step(plan: Plan, result: AuditResult, analysis: Analysis,
                 results_path: str, display: Display = Display()):
    """Profile diff and remedy trials of a complete audit (ExplainResult), else None.

    An audit cut short is not explained: its error is the outcome.
    """
    from eb_torchperf.probe.profile import DEFAULT_WORKLOADS, MODEL_WORKLOADS
    from eb_torchperf.explain_stage.run import explain
    options = plan.request.explain
    if options is None or not result.complete:
        return None
    trial_options = plan.trial_options
    if options.trial_pairs is not None and result.suite != plan.request.suite:
        trial_options = runner_options(result.suite, plan.request.timeout_s,
                                       options.trial_pairs, "--trial-pairs")
    kwargs = dict(results_file=os.path.abspath(results_path) if results_path else None,
                  profile_options=plan.profile_options, try_remedies=options.try_remedies,
                  workloads=tuple(_default_workloads(result, DEFAULT_WORKLOADS, MODEL_WORKLOADS)
                                  if options.workloads is None else options.workloads),
                  trial_options=trial_options)
    progress = display.explain_progress() if display.explain_progress else nullcontext()
    with progress:
        return explain(result, analysis, progress=progress if display.explain_progress
                       else None, **kwargs)


def confirm_trials(request: AuditRequest, result: AuditResult, analysis: Analysis,
                   display: Display):
    """Issue 29: the trials that confirm an unexplained slowdown's cause, as an explain
    document without profiles (explain_stage/confirm.py), None when nothing is tried."""
    from eb_torchperf.explain_stage.confirm import audit_runner, confirm_step
    return confirm_step(result, analysis, audit_runner(result, analysis),
                        request.trial_budget_s, display.log)


def save(result: AuditResult, analysis: Analysis, path, explained=None,
         explain_file: str = "") -> None:
    """Write the results JSON, its `analysis` section from `analysis` (and the explain
    JSON, when there is one)."""
    if explained is not None and explain_file:
        explained.save(explain_file)
    if path:
        result.save(path, analysis_section(result, analysis))


def write_reports(result: AuditResult, analysis: Analysis, out_dir, formats: Sequence[str],
                  stem: Optional[str] = None, explained=None,
                  notes: Sequence[str] = (), title: Optional[str] = None,
                  protected: Sequence = ()) -> dict:
    """The reports of `result` in `formats` (none: nothing written); {format: path}.

    `protected` are input files (results JSON, stored runs) no report may replace.
    """
    if not formats:
        return {}
    from eb_torchperf.present.report import write_reports as write
    return write(result, analysis, out_dir, tuple(formats), stem=stem, explain=explained,
                 notes=notes, title=title, protected=protected)


def status_of(result: AuditResult, fail_on: str, stored: bool = False) -> int:
    """The exit status of a pipeline run (records.findings.exit_status); EXIT_ERROR
    when nothing was measured because benchmarks failed.

    Args:
        stored: a stored run re-rendered (`report`): its findings alone decide.
    """
    from eb_torchperf.diagnosis.verdict import failed_benchmarks
    return exit_status(result.findings, fail_on,
                       outcome=COMPLETE if stored else result.outcome,
                       failed=bool(failed_benchmarks(result)))


def _report_place(plan: Plan, results_path: str) -> Tuple[str, Optional[str]]:
    """(report folder, file stem): beside the results JSON unless told otherwise; a
    stem of None is present.report's default (the audit's start time)."""
    request = plan.request
    if not (results_path or request.results):
        return request.out_dir or ".", request.stem
    source = pathlib.Path(results_path or request.results or ".")
    out_dir = request.out_dir or str(source.parent)
    return out_dir, request.stem or source.stem


def run(request: AuditRequest, display: Display = Display()) -> PipelineOutcome:
    """Validate, then measure (or load), analyse, explain, save and report.

    The results JSON is saved before the explain step starts (and again with the
    profile evidence), so an explain that fails leaves the audit on disk.

    Raises:
        ConfigError: a bad option (before anything runs), an interpreter or
            reference that cannot be resolved.
        SchemaError: unreadable stored results.
        WriteError: `out` holds results already or another run is writing it.
    """
    plan = validate(request)
    claim = plan.out is not None and request.results is None
    created = claim and safe_write.claim_out(plan.out)  # no two runs write one name
    try:
        with _sigterm_as_interrupt(request.stop_on_sigterm):
            return _run(plan, display)
    finally:
        if claim:
            safe_write.release_out(plan.out, created)


def _run(plan: Plan, display: Display) -> PipelineOutcome:
    request = plan.request
    result = measure(plan, display)
    results_path = str(plan.out) if plan.out else ""
    if request.results is not None and not results_path and request.explain is not None:
        results_path = request.results
    # From the measured result to the saved file, Ctrl-C / SIGTERM (also twice) wait:
    # what was measured is diagnosed and written first, then the interrupt is taken:
    # no explain step, the reports still written (held too), and exit status 130.
    with interrupts.held(raise_after=False) as late:
        analysis = analyse(result, keep_findings=request.keep_findings,
                           fail_on=request.fail_on, minimum=request.minimum)
        result = dataclasses.replace(result, findings=analysis.findings)
        save(result, analysis, results_path)
    explained, explain_file = None, ""
    if request.explain is not None and not late.interrupted:
        explained = explain_step(plan, result, analysis, results_path, display)
    elif request.reuse_explain and request.results is not None:
        from eb_torchperf.workflows.stored import stored_explain
        explained = stored_explain(request.results, result, display.log)
    elif request.trials and request.results is None:
        explained = confirm_trials(request, result, analysis, display)
    if explained is not None:
        from eb_torchperf.explain_stage.explanation import with_profile_evidence
        result = with_profile_evidence(result, explained)
        analysis = analysis.with_findings(result.findings, explained.trials)
        if request.explain is not None or request.results is None:
            explain_file = _explain_path(plan, results_path)
            save(result, analysis, results_path, explained, explain_file)
    out_dir, stem = _report_place(plan, results_path)
    protected = tuple(p for p in (results_path, request.results, explain_file) if p)
    with interrupts.held(raise_after=False) as during_reports:
        written = write_reports(result, analysis, out_dir, request.formats, stem, explained,
                                protected=protected)
    status = (EXIT_INTERRUPTED if late.interrupted or during_reports.interrupted
              else status_of(result, request.fail_on,
                             stored=request.results is not None and request.explain is None))
    return PipelineOutcome(result, analysis, explained, results_path, explain_file,
                           written, status)
