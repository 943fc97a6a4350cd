"""The public Python API (re-exported lazily by `eb_torchperf`): script an audit
without the CLI.

    import eb_torchperf
    result = eb_torchperf.audit("/usr/bin/python3", reference="wheel==2.13.0",
                                only=["matmul_fp32"], pairs=1)
    for finding in result.findings:
        print(finding.severity, finding.rule_id, finding.title)
    eb_torchperf.write_reports(result, "reports", formats=("html", "md"))

Every function goes through the one pipeline (workflows.pipeline), so an API audit is
validated, measured and diagnosed exactly as `eb-torchperf audit` does it.
"""

import dataclasses
import os
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

from eb_torchperf.probe.profile import DEFAULT_ROUNDS
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.records.measurements import load_results as _load_results
from eb_torchperf.workflows import pipeline
from eb_torchperf.workflows.request import AuditRequest, ExplainOptions


def audit(target: Union[str, os.PathLike], reference: Optional[str] = "wheel",
          suite: str = "quick",
          log: Callable[[str], None] = lambda msg: None, **options) -> AuditResult:
    """Audit `target`'s torch against `reference`; the results with their findings.

    Args:
        target: interpreter path or command (e.g. "/usr/bin/python3"), str or Path.
        reference: interpreter, "wheel", "wheel==X.Y.Z", FILE.whl or "none".
        suite: "quick" or "full".
        log: callable for news lines (e.g. the reference venv being built).
        **options: further AuditRequest fields, e.g. only=["matmul_fp32"], pairs=1,
            devices=("cpu", "cuda"), timeout_s=300, target_env={"OMP_NUM_THREADS": "4"},
            out="run.json" (saved there; default: nothing written), formats=("html",
            "md") (reports beside `out`), explain=True (profile diff after the audit),
            cache_dir, pip_options.  Paths may be pathlib.Path; a single name may
            be given as a string (only="dispatch"); environment values that are
            numbers are converted to text.

    Raises:
        eb_torchperf.errors.ConfigError: a bad option (before anything runs), or a
            reference that cannot be resolved.
        TypeError: an unknown option name.
    """
    fields = {f.name for f in dataclasses.fields(AuditRequest)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise TypeError("audit() got unknown option(s): %s (known: %s)"
                        % (", ".join(unknown), ", ".join(sorted(fields))))
    for name in ("only", "devices", "formats", "pip_options"):
        if isinstance(options.get(name), str):  # only="dispatch": one name, not letters
            options[name] = (options[name],)
        elif name in options:
            options[name] = tuple(options[name])
    for name in ("out", "out_dir", "cache_dir", "results", "baseline"):
        if isinstance(options.get(name), os.PathLike):
            options[name] = os.fspath(options[name])
    target = os.fspath(target) if isinstance(target, os.PathLike) else target
    if isinstance(reference, os.PathLike):
        reference = os.fspath(reference)
    if options.get("explain") is True:
        options["explain"] = ExplainOptions()
    elif options.get("explain") is False:
        options["explain"] = None
    request = AuditRequest(target=target, reference=reference or "none", suite=suite,
                           **options)
    return pipeline.run(request, pipeline.Display(log=log)).result


def load_results(path) -> AuditResult:
    """Read a results JSON written by `audit` (records.measurements.load_results).

    Raises:
        eb_torchperf.errors.SchemaError: unreadable or not a results document.
    """
    return _load_results(path)


def diagnose(result: AuditResult) -> Tuple[Finding, ...]:
    """The findings of the diagnosis rules over `result`, most severe first."""
    return pipeline.analyse(result).findings


def write_reports(result: AuditResult, out_dir, formats: Sequence[str] = ("html", "md"),
                  stem: Optional[str] = None, explained=None) -> Dict[str, object]:
    """Write the reports of `result` into `out_dir`; {format: path}.

    A result without findings is diagnosed first (stored findings are kept).

    Args:
        formats: among "html", "md", "json".
        stem: file name without suffix (default: torchperf-<audit start time>).
        explained: an ExplainResult (see `explain`) for the report's Explain section.
    """
    pipeline.validate(AuditRequest(results="-", formats=tuple(formats)))
    analysis = pipeline.analyse(result, keep_findings=True)
    result = dataclasses.replace(result, findings=analysis.findings)
    if explained is not None:
        from eb_torchperf.explain_stage.explanation import with_profile_evidence
        result = with_profile_evidence(result, explained)
        analysis = analysis.with_findings(result.findings, explained.trials)
    return pipeline.write_reports(result, analysis, out_dir, formats, stem, explained)


def explain(result: Union[AuditResult, str, os.PathLike], workloads: Optional[Sequence[str]] = None,
            try_remedies: bool = True, trial_pairs: Optional[int] = 1,
            profile_rounds: int = DEFAULT_ROUNDS, timeout_s: Optional[float] = None):
    """Profile both sides of an audit per operator and try the run-time remedies.

    Args:
        result: an AuditResult with a target and a reference, or a results JSON path.
        workloads: probe.profile.WORKLOADS names (None: the micro workloads and the
            models measured; (): no profiling).
        try_remedies: run the remedy trials.
        trial_pairs: worker pairs per trial; profile_rounds: profile requests per side.

    Returns:
        explain_stage.run.ExplainResult (save it with `.save(path)`); None when the
        audit was cut short.

    Raises:
        eb_torchperf.errors.ConfigError: bad options, or an audit without a reference.
    """
    path = os.fspath(result) if isinstance(result, (str, os.PathLike)) else ""
    options = ExplainOptions(workloads=None if workloads is None else tuple(workloads),
                             try_remedies=try_remedies, trial_pairs=trial_pairs,
                             profile_rounds=profile_rounds)
    plan = pipeline.validate(AuditRequest(results=path or "-", explain=options,
                                          timeout_s=timeout_s))
    audit_result = _load_results(path) if path else result
    analysis = pipeline.analyse(audit_result, keep_findings=True)
    audit_result = dataclasses.replace(audit_result, findings=analysis.findings)
    return pipeline.explain_step(plan, audit_result, analysis, path)
