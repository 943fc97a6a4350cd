"""Run one unattended audit under a site Policy and write its reports.

Shared by the EasyBuild hook (`eb_torchperf.easybuild.hooks`) and `eb-torchperf
sanity-check`: resolve the reference (an interpreter, a wheel venv, or a stored
results JSON), audit, attach findings when the diagnosis rules are installed, judge,
and write into each output folder the results JSON, a verdict JSON and (when the
report package is installed) HTML and Markdown.
"""

import dataclasses
import json
import os
import pathlib
import time
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from eb_torchperf import __version__
from eb_torchperf.measure.interleave import SUITE_OPTIONS, AuditRun
from eb_torchperf.analysis.compare import compare
from eb_torchperf.diagnosis.diagnose import with_findings
from eb_torchperf.errors import ConfigError
from eb_torchperf.records.measurements import AuditResult, load_results
from eb_torchperf.measure.reference import resolve_reference
from eb_torchperf.present.report import write_reports
from eb_torchperf.diagnosis.sitepolicy import Policy, Verdict, judge, own_site_overrides

#: File names inside each output folder.
RESULTS_NAME = "torchperf.json"
VERDICT_NAME = "verdict.json"
#: Stem of the HTML/Markdown reports: torchperf.html, torchperf.md.
REPORT_STEM = "torchperf"


@dataclasses.dataclass(frozen=True)
class CheckOutcome:
    """What one site check produced.

    Attributes:
        result: the audit, findings attached.
        verdict: its judgement under the policy.
        report_paths: files written into the first output folder, main report first
            (the HTML report).
        notes: what was skipped and why (optional packages missing), one line each.
        wall_s: seconds the whole check took (reference set-up, audit, reports).
    """

    result: AuditResult
    verdict: Verdict
    report_paths: Tuple[str, ...]
    notes: Tuple[str, ...]
    wall_s: float

    @property
    def main_report(self) -> str:
        """The report a person should open first."""
        return self.report_paths[0] if self.report_paths else ""


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


def _resolve(policy: Policy, target_python: str, log: Callable[[str], None],
             reference_env=None, cache_dir=None):
    """(reference interpreter or None, baseline AuditResult or None)."""
    if policy.reference.endswith(".json"):
        return None, load_results(os.path.expanduser(policy.reference))
    return resolve_reference(policy.reference, target_python, log=log, env=reference_env,
                             cache_dir=cache_dir), None


def attach_findings(result: AuditResult, notes: List[str]) -> AuditResult:
    """Run the diagnosis rules over `result` (`notes` kept for the caller's log)."""
    return with_findings(result)


def write_outputs(result: AuditResult, verdict: Verdict, policy: Policy, out_dir: str,
                  notes: List[str]) -> List[str]:
    """Write results JSON, verdict JSON and HTML/Markdown (if available) into `out_dir`.

    Returns:
        the paths written, main report first, verdict JSON last.
    """
    os.makedirs(out_dir, exist_ok=True)
    results_path = os.path.join(out_dir, RESULTS_NAME)
    result.save(results_path)
    written = write_reports(result, out_dir, formats=("html", "md"), stem=REPORT_STEM)
    paths = [os.fspath(p) for p in written.values()]
    paths.sort(key=lambda p: not p.endswith(".html"))
    paths.append(results_path)
    verdict_path = os.path.join(out_dir, VERDICT_NAME)
    document = dict(verdict.to_json(), policy=dataclasses.asdict(policy),
                    results=RESULTS_NAME, reports=[os.path.basename(p) for p in paths],
                    tool_version=__version__, created_utc=result.created_utc)
    with open(verdict_path, "w") as handle:
        json.dump(document, handle, indent=1, default=str)
        handle.write("\n")
    return paths + [verdict_path]


def check_torch_location(result: AuditResult, installdir: str) -> None:
    """Make sure the audited torch is the one under `installdir`.

    Raises:
        ConfigError: the target imported torch from elsewhere (message has both paths).
    """
    torch_file = result.target.fact("torch", "file") if result.target else None
    root = os.path.realpath(installdir) + os.sep
    if torch_file and not os.path.realpath(torch_file).startswith(root):
        raise ConfigError("the audited torch %s is not the installation's (%s): set "
                          "EB_TORCHPERF_PYTHON to the interpreter that uses it"
                          % (torch_file, installdir))


def _without_own_site(overrides: Optional[Mapping[str, Optional[str]]]) -> dict:
    """`overrides` plus the removal of eb_torchperf's own folder from the PYTHONPATH
    the side ends up with."""
    merged = dict(os.environ)
    for key, value in (overrides or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return dict(overrides or {}, **own_site_overrides(merged))


def _audit(policy: Policy, target_python: str, reference: Optional[str], target_env,
           reference_env) -> AuditResult:
    options = dataclasses.replace(SUITE_OPTIONS[policy.suite],
                                  allow_same_torch=policy.allow_same_torch)
    if policy.pairs is not None:
        options = dataclasses.replace(options, pairs=policy.pairs)
    try:
        run = AuditRun(target_python, reference, policy.suite, options, only=policy.only or None,
                       target_env=target_env, reference_env=reference_env)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return run.run()


def run_check(target_python: str, policy: Policy, out_dirs: Sequence[str],
              target_env: Optional[Mapping[str, Optional[str]]] = None,
              reference_env: Optional[Mapping[str, Optional[str]]] = None,
              log: Callable[[str], None] = lambda msg: None,
              installdir: Optional[str] = None,
              cache_dir: Optional[pathlib.Path] = None) -> CheckOutcome:
    """Audit `target_python` under `policy` and write the reports into every folder.

    Args:
        target_python: interpreter whose torch is audited, in the current environment.
        policy: reference, suite, thresholds.
        out_dirs: folders for the reports (created); the first one is the main one.
        target_env, reference_env: environment overrides per side (None: remove);
            eb_torchperf's own PYTHONPATH entry is removed for both sides.
        log: callable for progress lines (reference venv creation).
        installdir: when given, the audited torch must lie under it.
        cache_dir: where reference venvs are kept (None: reference.default_cache_dir()).

    Raises:
        ConfigError: bad reference or benchmark names; torch not from `installdir`.
        SchemaError: unreadable baseline JSON.
    """
    started = time.monotonic()
    notes: List[str] = []
    reference_env = _without_own_site(reference_env)
    reference, baseline = _resolve(policy, target_python, log, reference_env, cache_dir)
    result = _audit(policy, target_python, reference, _without_own_site(target_env),
                    reference_env)
    if baseline is not None:
        result = with_baseline(result, baseline)
    result = attach_findings(result, notes)
    verdict = judge(result, compare(result), policy)
    paths: List[str] = []
    for out_dir in out_dirs:
        written = write_outputs(result, verdict, policy, out_dir, notes)
        paths = paths or written
    if installdir:
        check_torch_location(result, installdir)
    return CheckOutcome(result, verdict, tuple(paths), tuple(notes), time.monotonic() - started)
