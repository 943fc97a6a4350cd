"""Audit one PyTorch on every node type of a Slurm cluster: one job per partition.

Each job runs `eb-torchperf audit` on its partition and writes its results JSON into
the fleet folder; the fleet waits for all jobs (cancelling what still runs at
--deadline), then renders one report: relative OPS per node type and benchmark,
findings per node type, and every failed job with its cause (Slurm's exit state,
signal, the audit's error, stderr).  The folder keeps everything; re-render it with
--render DIR.  Options after `--` are passed to sbatch as they are.

examples:
  eb-torchperf fleet -p zen -p grace -p gpu-h100 --module PyTorch/2.9.1-foss-2025a \\
      --reference /shared/venvs/torch-wheel/bin/python --time 00:20:00 --cpus-per-task 16
  eb-torchperf fleet -p zen --python /sw/torch/bin/python --reference wheel==2.9.1 \\
      --dry-run -- --qos=debug --mem=32G
  eb-torchperf fleet --render reports/fleet-20261130-120000

exit status: 0 every job audited, no finding at or above --fail-on (default error);
1 such a finding; 2 a job failed or has not finished, or a usage or tool error (sbatch
refused every job); 3 a bug.
"""

import datetime
import os
import pathlib
import shlex

from rich.console import Console

from eb_torchperf.measure.interleave import SUITE_OPTIONS
from eb_torchperf.cli.audit import add_db_argument, only_help
from eb_torchperf.errors import ConfigError, SlurmError
from eb_torchperf.fleet import gather as gather_mod
from eb_torchperf.fleet import render, submit
from eb_torchperf.present.terminal import PipeConsole
from eb_torchperf.fleet.plan import (AuditSpec, FleetManifest, SbatchOptions, batch_script,
                                     check_script_values, default_launcher, job_paths,
                                     load_manifest, plan_jobs, utc_now)
from eb_torchperf.records import safe_write
from eb_torchperf.measure.reference import is_wheel_spec, resolve_interpreter, resolve_reference
from eb_torchperf.records.findings import EXIT_INTERRUPTED, FAIL_LEVELS, exit_status

DEFAULT_DEADLINE_S = 3600.0
REPORT_NAME = "fleet.md"


def add_arguments(parser) -> None:
    _slurm_arguments(parser.add_argument_group("Slurm (sbatch's own options)"))
    _audit_arguments(parser.add_argument_group("audit (as in eb-torchperf audit)"))
    _fleet_arguments(parser.add_argument_group("fleet"))


def _slurm_arguments(slurm) -> None:
    slurm.add_argument("-p", "--partition", action="append", default=[],
                       help="partition to audit on (repeatable: one job each)")
    slurm.add_argument("-A", "--account")
    slurm.add_argument("-t", "--time", help="time limit of each job, e.g. 00:20:00")
    slurm.add_argument("-c", "--cpus-per-task", type=int)
    slurm.add_argument("--gres", help="e.g. gpu:1")
    slurm.add_argument("-C", "--constraint")
    slurm.add_argument("sbatch_extra", nargs="*", metavar="-- SBATCH_OPTION",
                       help="further sbatch options, after `--`")


def _audit_arguments(audit) -> None:
    audit.add_argument("--python", action="append", default=[], metavar="TARGET",
                       help="interpreter to audit, as found on the nodes (repeatable; "
                            "default python3)")
    audit.add_argument("--module", action="append", default=[],
                       help="module to `module load` in the job and audit its python3 "
                            "(repeatable)")
    audit.add_argument("--reference", metavar="REF",
                       help="reference interpreter path, wheel==X.Y.Z, FILE.whl (built once "
                            "here, in a cache folder the nodes must see) or none")
    audit.add_argument("--suite", choices=sorted(SUITE_OPTIONS), default="quick")
    audit.add_argument("--only", action="append", default=[], metavar="BENCH", help=only_help())
    audit.add_argument("--pairs", type=int)
    audit.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                       help="a worker silent this long is taken as hung (default 300)")
    audit.add_argument("--allow-same-torch", action="store_true",
                       help="an A/A run: the reference may be the targets' own torch build "
                            "(otherwise each job stops before measuring)")
    audit.add_argument("--pip-option", action="append", default=[], metavar="OPT")
    audit.add_argument("--cache-dir", help="where a wheel reference venv is built")


def _fleet_arguments(fleet) -> None:
    fleet.add_argument("-o", "--out", metavar="DIR",
                       help="fleet folder, on a filesystem the nodes share "
                            "(default: reports/fleet-<UTC time>)")
    fleet.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE_S, metavar="SECONDS",
                       help="cancel jobs still queued or running after this long "
                            "(default %g)" % DEFAULT_DEADLINE_S)
    fleet.add_argument("--no-wait", action="store_true",
                       help="submit and return; render later with --render DIR")
    fleet.add_argument("--dry-run", action="store_true",
                       help="print the batch scripts; submit nothing, write nothing")
    fleet.add_argument("--render", metavar="DIR",
                       help="gather and render an existing fleet folder (no submission)")
    fleet.add_argument("--launcher", metavar="COMMAND",
                       help="how the nodes run eb-torchperf (default: this interpreter, "
                            "-m eb_torchperf.cli)")
    fleet.add_argument("--fail-on", choices=FAIL_LEVELS, default="error",
                       help="exit 1 when a job has a finding at or above this severity "
                            "(default: error; a failed or unfinished job always exits 2)")
    add_db_argument(fleet)  # each ok job is stored when gathered here, under its partition


def resolve_fleet_reference(spec, pip_options, cache_dir, dry_run: bool):
    """The reference interpreter every job uses (built here when it is a wheel).

    Raises:
        ConfigError: no --reference, bare `wheel` (needs the target's version, which
            only the nodes can tell), or a path that does not exist.
    """
    if not spec:
        raise ConfigError("give --reference: an interpreter path the nodes can run, "
                          "wheel==X.Y.Z, FILE.whl, or none")
    if spec == "none":
        return None
    if spec == "wheel":
        raise ConfigError("--reference wheel needs the target's torch version, which only "
                          "the nodes can tell: give --reference wheel==X.Y.Z")
    # the one resolver (measure.reference); no target here, so a wheel needs its version
    if not is_wheel_spec(spec):
        return os.path.abspath(resolve_interpreter(
            spec, "reference", hint="give a path to a python the nodes can run, "
                                    "wheel==X.Y.Z, FILE.whl or none"))
    return resolve_reference(spec, None, pip_options,
                             pathlib.Path(cache_dir) if cache_dir else None, build=not dry_run)


def build_manifest(args) -> FleetManifest:
    """The fleet run the arguments describe (nothing written yet).

    Raises:
        ConfigError: bad options (see plan_jobs, SbatchOptions, resolve_fleet_reference).
    """
    jobs = plan_jobs(args.partition, args.python, args.module)
    sbatch = SbatchOptions(args.account, args.time, args.cpus_per_task, args.gres,
                           args.constraint, tuple(args.sbatch_extra))
    if args.pairs is not None and args.pairs < 1:
        raise ConfigError("--pairs must be >= 1")
    audit = AuditSpec(
        launcher=tuple(shlex.split(args.launcher)) if args.launcher else default_launcher(),
        reference=resolve_fleet_reference(args.reference, args.pip_option, args.cache_dir,
                                          args.dry_run),
        suite=args.suite, only=tuple(args.only), pairs=args.pairs,
        worker_timeout_s=args.timeout, allow_same_torch=args.allow_same_torch)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    directory = os.path.abspath(args.out or os.path.join("reports", "fleet-" + stamp))
    manifest = FleetManifest(directory, sbatch, audit, tuple(jobs), utc_now(), args.deadline)
    for job in manifest.jobs:  # every value checked before anything is built or written
        check_script_values(job, directory, sbatch, audit)
    return manifest


def report(manifest: FleetManifest, out: Console, fail_on: str = "error",
           db=None) -> int:
    """Gather (storing ok jobs in the results database `db`), write DIR/fleet.md, print
    the report; returns the exit status (records.findings.exit_status over every job's
    findings; a job not ok fails)."""
    outcomes = gather_mod.gather(manifest, db)
    view = render.fleet_view(manifest, outcomes)
    path = os.path.join(manifest.directory, REPORT_NAME)
    safe_write.write_text(path, render.render_markdown(view))
    out.print(render.render_terminal(view))
    out.print("fleet report: %s" % path, highlight=False, markup=False)
    for line in dict.fromkeys(o.stored for o in outcomes if o.stored):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    return exit_status([f for o in outcomes for f in o.findings], fail_on,
                       failed=any(o.status != "ok" for o in outcomes))


def _logger(console: Console):
    """msg -> one plain line on `console` (no wrapping, no rich markup)."""
    return lambda msg: console.print(msg, highlight=False, markup=False, soft_wrap=True)


def _render_existing(directory: str, out: Console, log, fail_on: str = "error",
                     db=None) -> int:
    manifest = load_manifest(directory)
    try:
        manifest = submit.refresh_states(manifest, log=log)
        manifest.save()
    except SlurmError as exc:
        log("could not ask Slurm about unfinished jobs (%s); rendering what the folder holds"
            % exc)
    return report(manifest, out, fail_on, db)


def _dry_run(manifest: FleetManifest) -> int:
    for job in manifest.jobs:
        print("# --- %s" % job_paths(manifest.directory, job.name)["script"])
        print(batch_script(job, manifest.directory, manifest.sbatch, manifest.audit), end="")
    return 0


def run(args) -> int:
    out = PipeConsole()
    log = _logger(PipeConsole(stderr=True))
    if args.render:
        return _render_existing(args.render, out, log, args.fail_on, args.db)
    manifest = build_manifest(args)
    if args.dry_run:
        return _dry_run(manifest)
    manifest = submit.submit_jobs(manifest, log=log)
    if args.no_wait:
        log("submitted; render with: eb-torchperf fleet --render %s" % manifest.directory)
        return 0
    try:
        manifest = submit.wait_jobs(manifest, args.deadline, log=log)
    except KeyboardInterrupt:
        log("interrupted; the jobs keep running. Render later with: eb-torchperf fleet "
            "--render %s" % manifest.directory)
        return EXIT_INTERRUPTED
    return report(manifest, out, args.fail_on, args.db)
