"""Gather a fleet run: one outcome per job from its results JSON, Slurm state and stderr.

A job is "ok" when its results file holds a complete audit, whatever its exit status
(an audit may exit 1 for findings); "unfinished" while Slurm may still run it;
"failed" otherwise, with a one-line cause (see `failure_cause`): what eb-torchperf
did to the job (cancelled at the deadline), the audit's own error (e.g. "worker
killed by signal SIGILL while starting"), or the most telling line of the job's
stderr (slurmstepd's "CANCELLED AT ... DUE TO TIME LIMIT", "oom-kill", "Illegal
instruction").  Slurm's final state (exit code, signal) is shown beside it.
"""

import dataclasses
import os
import re
from typing import List, Optional, Tuple

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.errors import SchemaError
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult, load_results
from eb_torchperf.fleet.plan import FleetJob, FleetManifest, job_paths

#: Lines of a failed job's stderr kept for the report.
STDERR_TAIL_LINES = 8
#: Bytes read from the end of a stderr file (a runaway job can write gigabytes).
STDERR_READ_BYTES = 64 * 1024
#: stderr lines that name a cause; the last one that matches goes into the cause.
TELLING_LINE = re.compile(r"error|cancelled|due to time limit|oom|out of memory|killed|"
                          r"illegal instruction|segmentation fault|core dumped|"
                          r"no such file|not found", re.IGNORECASE)
STATUSES = ("ok", "failed", "unfinished")


@dataclasses.dataclass(frozen=True)
class JobOutcome:
    """What one fleet job produced.

    Attributes:
        job: the job as last recorded in the manifest.
        status: one of STATUSES.
        result: the audit results (also for failed jobs, when the audit wrote some).
        comparisons: relative OPS per benchmark (eb_torchperf.analysis.compare.compare), ok jobs.
        findings: diagnosis of ok jobs (stored in the results, else from
            eb_torchperf.diagnosis.diagnose when installed).
        findings_available: False when no diagnosis could be made (diagnose missing).
        cause: one line, why a failed job failed ("" otherwise).
        stderr_tail: the last STDERR_TAIL_LINES lines of the job's stderr.
        stored: one line on storing an ok job's results in the results database
            (eb_torchperf.store; "" when storing is off).
    """

    job: FleetJob
    status: str
    result: Optional[AuditResult] = None
    comparisons: Tuple[Comparison, ...] = ()
    findings: Tuple[Finding, ...] = ()
    findings_available: bool = False
    cause: str = ""
    stderr_tail: str = ""
    stored: str = ""

    @property
    def cpu_model(self) -> str:
        """CPU model the target ran on (/proc/cpuinfo via the probe), "" when unknown."""
        probe = self.result.target if self.result else None
        return str(probe.fact("cpu", "model") or "") if probe else ""

    @property
    def gpus(self) -> str:
        """GPU names the target's torch saw ("2x NVIDIA H200"), "none", or "" unknown."""
        probe = self.result.target if self.result else None
        if probe is None or probe.fact("gpu", "devices") is None:
            return ""
        names = [d.get("name", "?") for d in probe.fact("gpu", "devices") or ()]
        if not names:
            return "none"
        return ", ".join("%dx %s" % (names.count(n), n) for n in dict.fromkeys(names))

    @property
    def host(self) -> str:
        """Node the job ran on: the audit's host name, else Slurm's node list."""
        if self.result and self.result.host:
            return self.result.host
        return self.job.state.node if self.job.state else ""


def analysed(result: AuditResult) -> Tuple[Tuple[Comparison, ...], Tuple[Finding, ...], bool]:
    """(comparisons, findings, whether a diagnosis was available) of a gathered audit.

    The pipeline's analysis step (workflows.pipeline.analyse): findings stored in the
    results win; otherwise the diagnosis rules run.
    """
    from eb_torchperf.workflows import pipeline
    analysis = pipeline.analyse(result, keep_findings=True)
    return analysis.comparisons, analysis.findings, True


def findings_of(result: AuditResult) -> Tuple[Tuple[Finding, ...], bool]:
    """The findings of an audit and whether a diagnosis was available (see analysed)."""
    _, findings, available = analysed(result)
    return findings, available


def read_tail(path: str, lines: int = STDERR_TAIL_LINES) -> str:
    """The last `lines` non-empty lines of a text file, "" when it does not exist."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - STDERR_READ_BYTES))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def failure_cause(job: FleetJob, result: Optional[AuditResult], results_problem: str,
                  stderr_tail: str) -> str:
    """One line saying why a job failed, beside its Slurm state (shown apart).

    Parts, joined by "; ": sbatch's refusal, eb-torchperf's own action (deadline), the
    audit's last error, else the most telling stderr line, else the results problem;
    Slurm's state alone when nothing else is known.
    """
    parts = []
    if job.state is not None and not job.job_id:
        parts.append("not submitted: %s" % job.state.reason)
    if job.note:
        parts.append(job.note)
    if result is not None and result.errors:
        parts.append(str(result.errors[-1].get("message", "")))
    else:
        telling = _telling_line(stderr_tail)
        if telling:
            parts.append(telling)
        elif results_problem and job.job_id:
            parts.append(results_problem)
    if not parts and job.state is not None:
        parts.append(job.state.describe())
    return "; ".join(p for p in parts if p) or "unknown (no Slurm state, results or stderr)"


def _telling_line(stderr_tail: str) -> str:
    """The last stderr line matching TELLING_LINE, with the next line when it ends in ":"
    (Lmod: 'The following module(s) are unknown:' / '"nosuch/1.0"')."""
    lines = [line.strip() for line in stderr_tail.splitlines()]
    for index in range(len(lines) - 1, -1, -1):
        if TELLING_LINE.search(lines[index]):
            more = lines[index + 1:index + 2] if lines[index].endswith(":") else []
            return " ".join([lines[index]] + more)
    return ""


def _load(path: str) -> Tuple[Optional[AuditResult], str]:
    if not os.path.exists(path):
        return None, "no results file (the audit did not start or was killed before writing)"
    try:
        return load_results(path), ""
    except SchemaError as exc:
        return None, str(exc)


def _store(job: FleetJob, results_path: str, db: Optional[str] = None) -> str:
    """Store a job's results in `db` (None: EB_TORCHPERF_DB, else the default; node type:
    its partition; build: its module, if any); idempotent, so gathering again stores
    nothing twice (store.write)."""
    from eb_torchperf.store.context import from_env
    from eb_torchperf.store.quiet import record_quietly
    build = job.target if job.kind == "module" else ""
    return record_quietly(results_path, from_env("fleet", job.partition, build=build),
                          db=db)[1]


def outcome_of(job: FleetJob, directory: str, db: Optional[str] = None) -> JobOutcome:
    """Gather one job from the fleet folder (results, stderr) and its recorded state;
    an ok job's results are stored in the results database `db` (_store)."""
    paths = job_paths(directory, job.name)
    result, problem = _load(paths["results"])
    if result is not None and result.complete:
        comparisons, findings, available = analysed(result)
        return JobOutcome(job, "ok", result, comparisons, findings, available,
                          stored=_store(job, paths["results"], db))
    ended = job.job_id is None or (job.state is not None and job.state.terminal)
    if not ended:
        return JobOutcome(job, "unfinished", result)
    tail = read_tail(paths["stderr"])
    return JobOutcome(job, "failed", result, cause=failure_cause(job, result, problem, tail),
                      stderr_tail=tail)


def gather(manifest: FleetManifest, db: Optional[str] = None) -> List[JobOutcome]:
    """One JobOutcome per job of the fleet, in manifest order (ok jobs stored in `db`)."""
    return [outcome_of(job, manifest.directory, db) for job in manifest.jobs]
