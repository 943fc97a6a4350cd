"""Stored runs through the pipeline: `compare` of two results files (unpaired), and the
explain document found beside a results file (`report`)."""

import dataclasses
import pathlib
from typing import Callable, Optional, Sequence, Tuple

from eb_torchperf.errors import ConfigError, SchemaError
from eb_torchperf.records.measurements import AuditResult, load_results
from eb_torchperf.workflows import pipeline
from eb_torchperf.workflows.request import AuditRequest


def stored_explain(results_path, result: AuditResult, log: Callable[[str], None]):
    """The explain JSON beside a stored results file, when it is about that audit.

    A file the user did not name is never fatal: unreadable or stale, it is ignored
    with one line to `log`.
    """
    from eb_torchperf.explain_stage.explanation import explain_path, find_explain, stale_reason
    try:
        explained = find_explain(results_path)
        stale = explained and stale_reason(explained, result)
    except SchemaError as exc:
        explained, stale = None, str(exc)
    if stale:
        log("ignoring %s: %s" % (explain_path(results_path), stale))
        return None
    return explained


def compare_stored(before, after, out_dir: Optional[str] = None,
                   formats: Sequence[str] = (), fail_on: str = "error",
                   stem: Optional[str] = None
                   ) -> Tuple[pipeline.PipelineOutcome, str, Tuple[str, ...]]:
    """Two stored runs, unpaired (analysis.unpaired): A the reference, B the target.

    Returns:
        (the outcome of the combined run, the unpaired-comparison note shown with it,
        what differs between the two runs, one line each: present.run_diff).

    Raises:
        SchemaError: unreadable files; ConfigError: a run cut short or without target
            measurements.
    """
    from eb_torchperf.analysis.unpaired import UNPAIRED_FLOOR, UNPAIRED_NOTE, combine_runs
    pipeline.validate(AuditRequest(results=str(after), formats=tuple(formats), fail_on=fail_on))
    before, after = pathlib.Path(before), pathlib.Path(after)
    from eb_torchperf.present.run_diff import run_differences
    run_a, run_b = _usable(before), _usable(after)
    combined = combine_runs(run_a, run_b)
    differences = tuple(run_differences(run_a, run_b))
    analysis = pipeline.analyse(combined, unpaired=True, fail_on=fail_on)
    combined = dataclasses.replace(combined, findings=analysis.findings)
    note = UNPAIRED_NOTE % (before.name, after.name, round(100 * UNPAIRED_FLOOR))
    written = pipeline.write_reports(
        combined, analysis, out_dir or after.parent, formats,
        stem or "compare-%s-vs-%s" % (before.stem, after.stem),
        notes=(note, "What differs, A → B: " + "; ".join(differences)),
        title="Stored runs compared: %s (reference) vs %s (target)" % (before.name, after.name),
        protected=(before, after))
    status = pipeline.status_of(combined, fail_on, stored=True)
    outcome = pipeline.PipelineOutcome(combined, analysis, written=written, status=status)
    return outcome, note, differences


def _usable(path) -> AuditResult:
    """The stored run at `path`, if it can stand in a comparison.

    Raises:
        SchemaError: unreadable, or not a results document.
        ConfigError: the run was cut short or measured nothing on its target side.
    """
    result = load_results(path)
    if not result.complete:
        raise ConfigError("%s is an incomplete run (%s); compare needs complete runs"
                          % (path, result.errors[-1]["message"] if result.errors else "cut short"))
    if result.target is None or not result.results_for("target"):
        raise ConfigError("%s has no target measurements to compare" % path)
    return result
