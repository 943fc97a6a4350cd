"""Run one unattended audit under a site Policy and write its reports.

Shared by the EasyBuild hook (`eb_torchperf.easybuild.hooks`) and `eb-torchperf
sanity-check`: the policy becomes one pipeline request (`workflows.pipeline`: the
reference is an interpreter, a wheel venv, or a stored results JSON whose target side
is the baseline), the pipeline audits and diagnoses, the site policy judges, and each
output folder receives the results JSON, a verdict JSON, HTML and Markdown.
"""

import dataclasses
import os
import pathlib
import time
from typing import Callable, List, Mapping, Optional, Sequence, Tuple

from eb_torchperf import __version__
from eb_torchperf.measure.environ import apply_overrides, own_site_overrides, path_under
from eb_torchperf.records import safe_write
from eb_torchperf.present.analysis_doc import analysis as analysis_section
from eb_torchperf.errors import ConfigError
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.present.report import write_reports
from eb_torchperf.diagnosis.sitepolicy import Policy
from eb_torchperf.present.site_verdict import Verdict, judge
from eb_torchperf.workflows import pipeline
from eb_torchperf.workflows.pipeline import with_baseline  # noqa: F401  (sitecheck API)
from eb_torchperf.workflows.request import AuditRequest

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
        wall_s: seconds the whole check took (reference set-up, audit, reports).
    """

    result: AuditResult
    verdict: Verdict
    report_paths: Tuple[str, ...]
    wall_s: float
    stored: object = None  # store.buildcheck.BuildNote: results database, regressions

    @property
    def main_report(self) -> str:
        """The report a person should open first."""
        return self.report_paths[0] if self.report_paths else ""


def write_outputs(result: AuditResult, analysis: Analysis, verdict: Verdict, policy: Policy,
                  out_dir: str) -> List[str]:
    """Write results JSON, verdict JSON and HTML/Markdown (if available) into `out_dir`.

    Returns:
        the paths written, main report first, verdict JSON last.
    """
    os.makedirs(out_dir, exist_ok=True)
    results_path = os.path.join(out_dir, RESULTS_NAME)
    result.save(results_path, analysis_section(result, analysis))
    written = write_reports(result, analysis, out_dir, formats=("html", "md"), stem=REPORT_STEM)
    paths = [os.fspath(p) for p in written.values()]
    paths.sort(key=lambda p: not p.endswith(".html"))
    paths.append(results_path)
    verdict_path = os.path.join(out_dir, VERDICT_NAME)
    document = dict(verdict.to_json(), policy=dataclasses.asdict(policy),
                    results=RESULTS_NAME, reports=[os.path.basename(p) for p in paths],
                    tool_version=__version__, created_utc=result.created_utc)
    safe_write.write_json(verdict_path, document)
    return paths + [verdict_path]


def check_torch_location(result: AuditResult, installdir: str) -> None:
    """Make sure the audited torch is the one under `installdir`.

    Raises:
        ConfigError: the target imported torch from elsewhere (message has both paths).
    """
    torch_file = result.target.fact("torch", "file") if result.target else None
    if torch_file and not path_under(torch_file, installdir):
        raise ConfigError("the audited torch %s is not the installation's (%s): set "
                          "EB_TORCHPERF_PYTHON to the interpreter that uses it"
                          % (torch_file, installdir))


def _without_own_site(overrides: Optional[Mapping[str, Optional[str]]]) -> dict:
    """`overrides` plus the removal of eb_torchperf's own folder from the PYTHONPATH
    the side ends up with."""
    merged = apply_overrides(os.environ, overrides)
    return dict(overrides or {}, **own_site_overrides(merged))


def request_of(policy: Policy, target_python: str,
               target_env: Optional[Mapping[str, Optional[str]]] = None,
               reference_env: Optional[Mapping[str, Optional[str]]] = None,
               cache_dir: Optional[str] = None) -> AuditRequest:
    """The pipeline request of a site check: the policy's reference (a results JSON
    is the baseline), suite, benchmarks and pairs; CPU benchmarks, the suite's
    timeouts; the policy's fail level and minimum for the verdict; eb_torchperf's own
    PYTHONPATH entry removed for both sides."""
    baseline = policy.reference if policy.reference.endswith(".json") else None
    return AuditRequest(
        target=target_python, reference="none" if baseline else policy.reference,
        baseline=baseline, suite=policy.suite, only=tuple(policy.only), pairs=policy.pairs,
        target_env=_without_own_site(target_env), reference_env=_without_own_site(reference_env),
        allow_same_torch=policy.allow_same_torch, cache_dir=cache_dir and str(cache_dir),
        fail_on=policy.fail_level, minimum=policy.min_relative_ops)


def run_check(target_python: str, policy: Policy, out_dirs: Sequence[str],
              target_env: Optional[Mapping[str, Optional[str]]] = None,
              reference_env: Optional[Mapping[str, Optional[str]]] = None,
              log: Callable[[str], None] = lambda msg: None,
              installdir: Optional[str] = None,
              cache_dir: Optional[pathlib.Path] = None, build=None) -> CheckOutcome:
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
        build: store.context.BuildContext for the results database (None: from env).

    Raises:
        ConfigError: bad reference or benchmark names; torch not from `installdir`.
        SchemaError: unreadable baseline JSON.
    """
    started = time.monotonic()
    outcome = pipeline.run(request_of(policy, target_python, target_env, reference_env,
                                      cache_dir),
                           pipeline.Display(log=log))
    result = outcome.result
    verdict = judge(outcome.analysis.verdict, policy, result.reference is not None)
    paths: List[str] = []
    for out_dir in out_dirs:
        written = write_outputs(result, outcome.analysis, verdict, policy, out_dir)
        paths = paths or written
    if installdir:
        check_torch_location(result, installdir)
    from eb_torchperf.store.quiet import store_and_compare
    from eb_torchperf.store.context import from_env
    stored = store_and_compare(os.path.join(out_dirs[0], RESULTS_NAME),
                               build or from_env("sanity-check"), paths[0] if paths else "")
    return CheckOutcome(result, verdict, tuple(paths), time.monotonic() - started, stored)
