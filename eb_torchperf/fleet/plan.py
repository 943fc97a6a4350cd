"""What a fleet run submits: one job per (partition, target), its batch script, and the
fleet folder's manifest (`fleet.json`) that re-rendering reads.

Fleet folder layout (one per fleet run; must be on a filesystem the nodes share):

    fleet.json              manifest: options, jobs, job ids, final Slurm states
    jobs/<name>.sbatch      the batch script submitted
    jobs/<name>.out/.err    the job's stdout and stderr
    results/<name>.json     the audit results (eb_torchperf.records.measurements schema)
    fleet.md                the rendered fleet report

Manifest history (MANIFEST_VERSION):
  1 (2026-11-30): first version.
"""

import dataclasses
import datetime
import json
import os
import re
import shlex
import sys
from typing import List, Optional, Sequence, Tuple

from eb_torchperf.errors import ConfigError, SchemaError
from eb_torchperf.present import escape
from eb_torchperf.records import safe_write, validate
from eb_torchperf.fleet.slurm import JobState

MANIFEST_VERSION = 1
MANIFEST_NAME = "fleet.json"
#: Characters allowed in a job name (file names, Slurm job names).
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclasses.dataclass(frozen=True)
class SbatchOptions:
    """Slurm options of every job, in Slurm's own terms (see sbatch(1)).

    Attributes:
        account, time, cpus_per_task, gres, constraint: the sbatch options of those
            names; None leaves them to the site's defaults.
        extra: further sbatch options passed through as given, e.g. ("--qos=debug",).
    """

    account: Optional[str] = None
    time: Optional[str] = None
    cpus_per_task: Optional[int] = None
    gres: Optional[str] = None
    constraint: Optional[str] = None
    extra: Tuple[str, ...] = ()

    def __post_init__(self):
        bad = [opt for opt in self.extra if not opt.startswith("-")]
        if bad:
            raise ConfigError("extra sbatch options must start with '-': %s (give them after "
                              "`--`, e.g. -- --qos=debug --mem=8G)" % " ".join(bad))
        if self.cpus_per_task is not None and self.cpus_per_task < 1:
            raise ConfigError("--cpus-per-task must be >= 1")

    def directives(self) -> List[str]:
        """The `#SBATCH` option words, named options first, then the extra ones."""
        named = [("account", self.account), ("time", self.time),
                 ("cpus-per-task", self.cpus_per_task), ("gres", self.gres),
                 ("constraint", self.constraint)]
        return ["--%s=%s" % (key, value) for key, value in named if value is not None] + \
            list(self.extra)


@dataclasses.dataclass(frozen=True)
class AuditSpec:
    """The `eb-torchperf audit` every job runs (same for all jobs).

    Attributes:
        launcher: argv that runs eb-torchperf on the nodes, e.g.
            ("/shared/venv/bin/python", "-E", "-m", "eb_torchperf.cli").
        reference: reference interpreter path, or None for absolute rates only.
        suite: "quick" or "full".
        only: benchmark names to restrict to (empty: the whole suite).
        pairs: worker pairs, None for the suite's default.
        worker_timeout_s: the audit's --timeout (a silent worker counts as hung).
        allow_same_torch: pass --allow-same-torch (an A/A fleet run: the reference may
            be the targets' own torch build).
    """

    launcher: Tuple[str, ...]
    reference: Optional[str]
    suite: str = "quick"
    only: Tuple[str, ...] = ()
    pairs: Optional[int] = None
    worker_timeout_s: float = 300.0
    allow_same_torch: bool = False

    def argv(self, python: str, out_path: str) -> List[str]:
        """The audit command line for one target interpreter.

        `--db off`: the job does not store its audit; gathering it on the submit host
        does (fleet.gather, source "fleet", the job's module as its build), so Slurm's
        exported EB_TORCHPERF_DB does not store it first as a CLI audit (issue 31).
        """
        argv = [*self.launcher, "audit", "--python", python,
                "--reference", self.reference or "none", "--suite", self.suite,
                "--timeout", "%g" % self.worker_timeout_s, "--quiet", "--db", "off",
                "--out", out_path]
        for name in self.only:
            argv += ["--only", name]
        if self.pairs is not None:
            argv += ["--pairs", str(self.pairs)]
        if self.allow_same_torch:
            argv.append("--allow-same-torch")
        return argv


@dataclasses.dataclass(frozen=True)
class FleetJob:
    """One audit job: a target on a partition.

    Attributes:
        name: unique in the fleet run; names the job's files ("zen", "zen--PyTorch-2.9.1").
        partition: Slurm partition (stands for a node type).
        target: interpreter path or command (kind "python"), or module name (kind "module").
        kind: "python" or "module".
        job_id: Slurm job id once submitted.
        state: the last JobState read from Slurm.
        note: what eb-torchperf did to the job, e.g. cancelled it at the fleet deadline.
    """

    name: str
    partition: str
    target: str
    kind: str = "python"
    job_id: Optional[str] = None
    state: Optional[JobState] = None
    note: str = ""

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["state"] = self.state.to_json() if self.state else None
        return data

    @classmethod
    def from_json(cls, data: dict) -> "FleetJob":
        data = dict(data)
        data["state"] = JobState.from_json(data["state"]) if data.get("state") else None
        return cls(**data)


def job_name(partition: str, target: str, several_targets: bool) -> str:
    """"zen", or "zen--<target as a file name>" when the fleet audits more than one target."""
    part = escape.file_name(partition)  # "-p ../../x" must not name a path outside
    if not several_targets:
        return part
    return "%s--%s" % (part, _NAME_UNSAFE.sub("-", target.replace(os.sep, "-")).strip("-.")
                       or "target")


def plan_jobs(partitions: Sequence[str], pythons: Sequence[str],
              modules: Sequence[str]) -> List[FleetJob]:
    """One FleetJob per partition and target (interpreters, then modules).

    Raises:
        ConfigError: no partition, a partition given twice, or job names that clash.
    """
    if not partitions:
        raise ConfigError("give at least one --partition")
    if len(set(partitions)) != len(partitions):
        raise ConfigError("a --partition is given twice: %s" % ", ".join(partitions))
    targets = [(p, "python") for p in pythons] + [(m, "module") for m in modules]
    targets = targets or [("python3", "python")]
    jobs = [FleetJob(job_name(part, target, len(targets) > 1), part, target, kind)
            for part in partitions for target, kind in targets]
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ConfigError("targets give the same job name (%s): give interpreters in "
                          "different folders or audit them in separate fleet runs"
                          % ", ".join(sorted({n for n in names if names.count(n) > 1})))
    return jobs


def job_paths(directory: str, name: str) -> dict:
    """Absolute paths of one job's files: script, stdout, stderr, results."""
    return {"script": os.path.join(directory, "jobs", name + ".sbatch"),
            "stdout": os.path.join(directory, "jobs", name + ".out"),
            "stderr": os.path.join(directory, "jobs", name + ".err"),
            "results": os.path.join(directory, "results", name + ".json")}


def batch_script(job: FleetJob, directory: str, sbatch: SbatchOptions, audit: AuditSpec) -> str:
    """The sbatch script of one job: directives, optional `module load`, the audit.

    A `module load` that fails fails the job (`set -e`), rather than auditing whatever
    python3 is on PATH.  The audit's exit status is the job's: 0 complete, 2 cut short
    (the results JSON still holds what was measured and the error).
    """
    check_script_values(job, directory, sbatch, audit)
    paths = job_paths(directory, job.name)
    # A login shell reads /etc/profile.d, where Lmod and Environment Modules define
    # `module`; sbatch runs the script as a plain non-login shell otherwise.
    lines = ["#!/bin/bash -l" if job.kind == "module" else "#!/bin/bash",
             "#SBATCH --job-name=torchperf-%s" % job.name,
             "#SBATCH --partition=%s" % job.partition,
             "#SBATCH --output=%s" % paths["stdout"],
             "#SBATCH --error=%s" % paths["stderr"]]
    lines += ["#SBATCH %s" % opt for opt in sbatch.directives()]
    lines += ["# eb-torchperf fleet: audit of %s %s on partition %s"
              % (job.kind, job.target, job.partition), "set -eu"]
    python = job.target
    if job.kind == "module":
        lines.append("module load %s" % shlex.quote(job.target))
        python = "python3"
    lines.append(format_command(audit.argv(python, paths["results"]), len(audit.launcher) + 1))
    return "\n".join(lines) + "\n"


def check_script_values(job: FleetJob, directory: str, sbatch: SbatchOptions,
                        audit: AuditSpec) -> None:
    """Refuse any value of a batch script that holds a control character: a newline in
    a partition, time limit, module or python path would start a shell line of its own
    on the compute node (#SBATCH lines and the comment line are not quoted).

    Raises:
        ConfigError: the first such value, named by its option.
    """
    values = [("--partition", job.partition), ("--python/--module", job.target),
              ("job name", job.name), ("fleet folder", directory),
              ("--reference", audit.reference or ""), ("--suite", audit.suite)]
    values += [("--launcher", word) for word in audit.launcher]
    values += [("--only", name) for name in audit.only]
    values += [("sbatch option", opt) for opt in sbatch.directives()]
    for what, value in values:
        escape.check_line(value, what)
    if not (0 < audit.worker_timeout_s < float("inf")):
        raise ConfigError("--timeout must be a finite number of seconds > 0, not %g"
                          % audit.worker_timeout_s)


def format_command(argv: Sequence[str], head: int) -> str:
    """Shell-quoted command, one option per continued line after the first `head` words."""
    groups = [[shlex.quote(w) for w in argv[:head]]]
    for word in argv[head:]:
        if word.startswith("--") or len(groups) == 1:
            groups.append([])
        groups[-1].append(shlex.quote(word))
    return " \\\n    ".join(" ".join(group) for group in groups)


def default_launcher() -> Tuple[str, ...]:
    """This interpreter running eb_torchperf's CLI, as the jobs should run it.

    `-E` keeps a loaded PyTorch module's PYTHONPATH out of eb-torchperf's own imports
    (the audit still hands it to the target); it is left out when eb_torchperf itself
    is found through PYTHONPATH.
    """
    import eb_torchperf
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(eb_torchperf.__file__)))
    on_pythonpath = any(os.path.abspath(p) == package_dir
                        for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    flags = () if on_pythonpath else ("-E",)
    return (sys.executable, *flags, "-m", "eb_torchperf.cli")


@dataclasses.dataclass(frozen=True)
class FleetManifest:
    """A fleet run: where it lives, what every job runs, and what Slurm said.

    Attributes:
        directory: absolute path of the fleet folder.
        sbatch: Slurm options of every job.
        audit: the audit every job runs.
        jobs: one FleetJob per (partition, target).
        created_utc: ISO 8601 time of submission.
        deadline_s: how long the fleet waited for its jobs.
    """

    directory: str
    sbatch: SbatchOptions
    audit: AuditSpec
    jobs: Tuple[FleetJob, ...]
    created_utc: str = ""
    deadline_s: Optional[float] = None

    def to_json(self) -> dict:
        return {"manifest_version": MANIFEST_VERSION, "directory": self.directory,
                "created_utc": self.created_utc, "deadline_s": self.deadline_s,
                "sbatch": dataclasses.asdict(self.sbatch),
                "audit": dataclasses.asdict(self.audit),
                "jobs": [job.to_json() for job in self.jobs]}

    @classmethod
    def from_json(cls, data: dict, directory: str) -> "FleetManifest":
        """Load; `directory` (where fleet.json was found) wins over the stored path,
        so a fleet folder can be moved or copied before re-rendering."""
        sbatch = dict(data["sbatch"], extra=tuple(data["sbatch"].get("extra", ())))
        audit = dict(data["audit"], launcher=tuple(data["audit"]["launcher"]),
                     only=tuple(data["audit"].get("only", ())))
        return cls(directory=directory, sbatch=SbatchOptions(**sbatch), audit=AuditSpec(**audit),
                   jobs=tuple(FleetJob.from_json(j) for j in data["jobs"]),
                   created_utc=data.get("created_utc", ""), deadline_s=data.get("deadline_s"))

    def with_jobs(self, jobs: Sequence[FleetJob]) -> "FleetManifest":
        """A copy with `jobs` replaced."""
        return dataclasses.replace(self, jobs=tuple(jobs))

    def save(self) -> str:
        """Write fleet.json into the fleet folder (atomically); returns its path."""
        path = os.path.join(self.directory, MANIFEST_NAME)
        safe_write.write_json(path, self.to_json())
        return path


def load_manifest(directory: str) -> FleetManifest:
    """Read DIR/fleet.json.

    Raises:
        SchemaError: missing, not JSON, unknown manifest version, or malformed.
    """
    path = os.path.join(directory, MANIFEST_NAME)
    try:
        with open(path) as handle:
            data = json.load(handle)
    except OSError as exc:
        raise SchemaError("cannot read %s: %s (is %s a fleet folder made by eb-torchperf "
                          "fleet?)" % (path, exc.strerror or exc, directory)) from None
    except ValueError as exc:
        raise SchemaError("%s is not JSON: %s" % (path, exc)) from None
    if not isinstance(data, dict) or data.get("manifest_version") != MANIFEST_VERSION:
        raise SchemaError("%s: manifest version %r is not supported (this eb_torchperf reads "
                          "%d)" % (path, isinstance(data, dict) and data.get("manifest_version"),
                                   MANIFEST_VERSION))
    try:
        validate.check_manifest(data)  # types per field: the first bad one, by its path
        return FleetManifest.from_json(data, os.path.abspath(directory))
    except SchemaError as exc:
        raise SchemaError("%s: %s" % (path, exc)) from None
    except (KeyError, TypeError, ValueError, ConfigError) as exc:
        raise SchemaError("%s: malformed manifest: %s: %s"
                          % (path, type(exc).__name__, exc)) from None


def utc_now() -> str:
    """Current UTC time, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
