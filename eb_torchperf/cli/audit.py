"""Audit a PyTorch interpreter against a reference, side by side.

Both interpreters run the same micro-suite in long-lived worker processes, block by
block in alternation (A B B A ...), so machine noise hits both; the result is the
relative OPS of each benchmark (reference = 100 %) with a 95 % interval, their
geometric mean, and the build/runtime configuration side by side.  Results are
written as JSON (schema-versioned) even when the run is cut short.

--reference accepts:
  PATH or COMMAND   another interpreter, e.g. ~/venvs/torch-wheel/bin/python
  wheel             the upstream wheel of the target's torch version, installed once
                    with pip into a cached venv (~/.cache/eb_torchperf)
  wheel==X.Y.Z      that version of the upstream wheel
  FILE.whl          that wheel file
  none              no reference: absolute rates only

The reference (and pip building its venv) runs without the target's PYTHONPATH,
EBPYTHONPREFIXES, PYTHONHOME, EBROOTPYTORCH and the LD_LIBRARY_PATH entries inside the
target's installation, so a loaded PyTorch module cannot leak into it
(--reference-env, --keep-reference-env).  Both sides loading the same torch (same
torch/__init__.py or build fingerprint) stops the audit before measuring, exit 2;
--allow-same-torch makes it an A/A run.

--explain also profiles a BERT-like layer, a ResNet-like block and a DLRM-like model
per operator on both sides after the audit (as `eb-torchperf explain --no-remedies`):
the findings gain the profile's evidence, the reports an "Explain" section, and
<stem>.explain.json is written beside the results.

The results JSON (with findings) is written first, then the reports (--format, HTML
and Markdown by default) with the same name next to it.  Exit status: 0 when no
finding is at or above --fail-on, 1 when one is, 2 on a usage or tool error or an
audit cut short, 130 when interrupted (results and reports so far are still written).
"""

import contextlib
import pathlib
import sys

from eb_torchperf.present import escape
from eb_torchperf.present.configdiff import config_rows
from eb_torchperf.measure.interleave import SUITE_OPTIONS
from eb_torchperf.diagnosis.verdict import failed_benchmarks
from eb_torchperf.probe import registry
from eb_torchperf.records.findings import EXIT_INTERRUPTED
from eb_torchperf.workflows import pipeline
from eb_torchperf.workflows.request import (DEFAULT_OUT_DIR, ENV_NAME,  # noqa: F401
                                            AuditRequest, ExplainOptions, check_writable,
                                            default_out_path, parse_env)
from eb_torchperf.present.formats import parse_formats
from eb_torchperf.cli.report import add_common_arguments, print_outcome
from eb_torchperf.present.terminal import (AuditProgress, config_table, make_console,
                                           models_table, ops_table)
from eb_torchperf.present.terminal_explain import ExplainProgress, print_explain

#: --device choice -> benchmark devices planned.
DEVICES = {"cpu": ("cpu",), "cuda": ("cuda",), "all": ("cpu", "cuda")}


def only_help() -> str:
    """`--only` help text with every benchmark name, by device (registry order)."""
    by_device = {}
    for name, bench in registry.load_suites().items():
        by_device.setdefault(bench.device, []).append(name)
    return "run only this benchmark (repeatable); %s" % "; ".join(
        "%s: %s" % (device, ", ".join(names)) for device, names in by_device.items())


def add_audit_arguments(parser) -> None:
    """The options of an audit run, shared with `explain` (its baseline audit)."""
    _add_side_arguments(parser)
    _add_run_arguments(parser)


def _add_side_arguments(parser) -> None:
    """What is audited against what: the two interpreters, the benchmarks, each side's
    environment."""
    parser.add_argument("--python", default="python3", metavar="TARGET",
                        help="interpreter whose torch is audited (default: python3 on PATH)")
    parser.add_argument("--reference", default="wheel", metavar="REF",
                        help="interpreter, wheel, wheel==X.Y.Z, FILE.whl or none "
                             "(default: wheel)")
    parser.add_argument("--suite", choices=sorted(SUITE_OPTIONS), default="quick",
                        help="quick (the default: ~1 min on 2 cores), full (several "
                             "minutes) or models (whole TorchBench-like models, a few minutes)")
    parser.add_argument("--only", action="append", metavar="BENCH", help=only_help())
    parser.add_argument("--device", choices=sorted(DEVICES), default="all",
                        help="benchmarks to run: cpu, cuda or all (default; the GPU part is "
                             "skipped, in one line, where the target has no GPU)")
    parser.add_argument("--target-env", action="append", default=[], metavar="VAR=VALUE",
                        help="set VAR for the target's workers only (repeatable), e.g. "
                             "--target-env CUDA_LAUNCH_BLOCKING=1; VAR= removes it")
    parser.add_argument("--reference-env", action="append", default=[], metavar="VAR=VALUE",
                        help="set VAR for the reference's workers only (repeatable; VAR= "
                             "removes it), applied after the reference is cut off from the "
                             "target's PYTHONPATH, EBPYTHONPREFIXES, PYTHONHOME and the "
                             "target installation's LD_LIBRARY_PATH entries")
    parser.add_argument("--keep-reference-env", action="store_true",
                        help="give the reference the target's Python path settings too "
                             "(by default it runs without them; a reference venv is always "
                             "built without them)")
    parser.add_argument("--allow-same-torch", action="store_true",
                        help="an A/A run: allow both sides to load the same torch (same "
                             "torch/__init__.py or build fingerprint); otherwise such an "
                             "audit stops before measuring (exit 2). Implied by "
                             "--target-env (one build, two environments)")


def _add_run_arguments(parser) -> None:
    """How the audit runs and where its results go."""
    parser.add_argument("--pairs", type=int,
                        help="fresh worker pairs, exactly (default by suite: 3, then extra "
                             "pairs for the rows whose interval is wider than ±5 %% while "
                             "the time budget lasts)")
    parser.add_argument("--wait-idle", type=float, nargs="?", const=600.0, metavar="SECONDS",
                        help="before measuring, wait until other processes leave the allowed "
                             "CPUs idle, at most SECONDS (default 600); a host still busy "
                             "then is measured anyway and reported busy")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                        help="a worker silent this long, also while it imports torch, is taken "
                             "as hung and killed (default 300)")
    parser.add_argument("--out", metavar="FILE",
                        help="results JSON (default: reports/torchperf-<UTC time>.json)")
    parser.add_argument("--pip-option", action="append", default=[], metavar="OPT",
                        help="extra pip option for building the wheel reference, e.g. "
                             "--pip-option=--index-url=https://download.pytorch.org/whl/cpu")
    parser.add_argument("--cache-dir", help="where reference venvs are kept "
                                            "(default: $EB_TORCHPERF_CACHE or ~/.cache/eb_torchperf)")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    add_common_arguments(parser)


def add_arguments(parser) -> None:
    add_audit_arguments(parser)
    parser.add_argument("--explain", action="store_true",
                        help="after the audit, profile both sides per operator (no remedy "
                             "trials; see eb-torchperf explain) and add the profile diff to "
                             "the findings and reports")
    parser.add_argument("--no-trials", action="store_true",
                        help="do not confirm an unexplained slowdown by trial (by default "
                             "the rows are re-run with each run-time difference removed, "
                             "bisecting many, within the trial budget)")
    parser.add_argument("--trial-budget", type=float, metavar="SECONDS",
                        help="seconds for those trials (default: 30 s or 30 %% of the "
                             "audit's wall time, whichever is larger)")
    add_store_arguments(parser)


def add_store_arguments(parser) -> None:
    """--node-type and --db: where the audit is stored (eb_torchperf.store)."""
    parser.add_argument("--node-type", metavar="NAME",
                        help="node type stored with the audit in the results database "
                             "(default: $EB_TORCHPERF_NODE_TYPE, else $SLURM_JOB_PARTITION)")
    add_db_argument(parser)


def add_db_argument(parser) -> None:
    """--db: the results database an audit is stored in (eb_torchperf.store)."""
    parser.add_argument("--db", metavar="PATH|URL",
                        help="results database (default: $EB_TORCHPERF_DB, else "
                             "~/.local/share/eb_torchperf/results.sqlite; off: do not store)")


def store(args, outcome) -> None:
    """Store the saved results JSON in the results database; a database problem is one
    line and never changes the exit status (store.quiet.record_quietly)."""
    path = outcome.results_path
    if not path or not pathlib.Path(path).is_file() or not outcome.result.results:
        return  # an audit that measured nothing has said so in its error line
    from eb_torchperf.store.context import from_env
    from eb_torchperf.store.quiet import record_quietly
    report = outcome.written.get("html") or ""
    _, line = record_quietly(path, from_env("cli", args.node_type), str(report), args.db)
    if line:
        print(line, file=sys.stderr)


def skip_lines(skipped) -> list:
    """One line per distinct reason: "skipped N benchmark(s) on SIDES: REASON (names)"."""
    groups = {}
    for skip in skipped:
        entry = groups.setdefault(skip["reason"], ([], []))
        for field, value in zip(entry, (skip["side"], skip["bench"])):
            if value not in field:
                field.append(value)
    return ["skipped %d benchmark%s on %s: %s (%s)" % (
        len(names), "" if len(names) == 1 else "s", ", ".join(sides), reason, ", ".join(names))
        for reason, (sides, names) in groups.items()]


def request_of(args, formats=(), **changes) -> AuditRequest:
    """The pipeline request of `audit` (and of `explain`, through `changes`)."""
    fields = dict(
        target=args.python, reference=args.reference, suite=args.suite,
        only=tuple(args.only or ()), devices=DEVICES[args.device],
        target_env=tuple(args.target_env), pairs=args.pairs, timeout_s=args.timeout,
        wait_idle_s=getattr(args, "wait_idle", None),
        out=args.out or ("" if "out" in changes else default_out_path()),
        formats=tuple(formats), fail_on=args.fail_on,
        explain=ExplainOptions() if getattr(args, "explain", False) else None,
        cache_dir=args.cache_dir, pip_options=tuple(args.pip_option), stop_on_sigterm=True,
        reference_env_extra=tuple(getattr(args, "reference_env", None) or ()),
        keep_reference_env=getattr(args, "keep_reference_env", False),
        allow_same_torch=getattr(args, "allow_same_torch", False),
        trials=not getattr(args, "no_trials", False),
        trial_budget_s=getattr(args, "trial_budget", None))
    fields.update(changes)
    return AuditRequest(**fields)


def display_of(err, quiet: bool) -> pipeline.Display:
    """Log lines and (unless quiet) rich progress bars on the `err` console."""
    return pipeline.Display(
        log=lambda msg: err.print(msg, highlight=False),
        audit_progress=None if quiet else (lambda total: AuditProgress(err, total)),
        explain_progress=None if quiet else (lambda: ExplainProgress(err)))


def stopped_line(outcome) -> str:
    """The error line of an audit cut short: its last error and where results went."""
    return "eb-torchperf: error: %s (results so far written to %s)" % (
        escape.one_line(outcome.result.errors[-1]["message"]) if outcome.result.errors
        else "cut short", outcome.results_path)


def print_tables(out, result, analysis) -> None:
    """The configuration, the Models table (when models ran) and the relative OPS table
    (the micro rows after a Models table), from the pipeline's analysis."""
    if result.target is not None:
        out.print(config_table(config_rows(result.target, result.reference),
                               result.reference is not None))
    models = models_table(analysis)
    if models is not None:
        out.print(models)
    shown, geo = ((analysis.micro, analysis.geomeans.get("micro")) if models is not None
                  else (analysis.comparisons, analysis.geomeans.get("all")))
    if shown:
        out.print(ops_table(shown, result.reference is not None, geo))


def check_db(value) -> None:
    """A --db given on the command line is checked before measuring (store.engine.check);
    EB_TORCHPERF_DB and the default are not: a database problem then costs one warning
    after the audit, never the audit (store.quiet).

    Raises:
        StoreError: --db cannot be used.
    """
    from eb_torchperf.store.location import StoreError, database_url
    url = database_url(value) if value is not None else None
    if url is None:
        return
    try:
        from eb_torchperf.store.engine import check
    except ImportError:  # no database libraries: the warning after the audit says so
        return
    try:
        check(url)
    except StoreError as exc:
        raise StoreError("--db %s" % exc) from None


def run(args) -> int:
    formats = tuple(f for f in parse_formats(args.format) if f != "json")
    check_db(args.db)
    out, err = make_console(), make_console(stderr=True)
    folder_existed = pathlib.Path(DEFAULT_OUT_DIR).is_dir()
    request = request_of(args, formats)
    try:
        outcome = pipeline.run(request, display_of(err, args.quiet))
    finally:
        claimed = pathlib.Path(request.out)
        if not args.out and claimed.is_file() and claimed.stat().st_size == 0:
            claimed.unlink()  # the claimed name of a run that saved nothing
            if not folder_existed:  # nor an empty reports/ folder after a usage error
                with contextlib.suppress(OSError):
                    claimed.parent.rmdir()
    try:
        return _finish(args, out, outcome)
    except KeyboardInterrupt:  # after the measurement: its results are saved already
        print(interrupted_line(outcome), file=sys.stderr)
        return EXIT_INTERRUPTED


def interrupted_line(outcome) -> str:
    """The line of an interrupt that came after the pipeline saved the results."""
    if not outcome.results_path:
        return "eb-torchperf: interrupted"
    if not outcome.result.complete:
        return "eb-torchperf: error: audit interrupted (results so far written to %s)" % (
            outcome.results_path)
    return "eb-torchperf: interrupted after the measurement (results written to %s)" % (
        outcome.results_path)


def _show(out, outcome) -> None:
    result, analysis = outcome.result, outcome.analysis
    print_tables(out, result, analysis)
    if outcome.explained is not None:
        print_explain(out, outcome.explained)
    for line in skip_lines(result.skipped):
        out.print(line, highlight=False, markup=False)
    print_outcome(out, result, analysis, outcome.written)
    out.print("results: %s  (%s)" % (outcome.results_path, time_spent(result, outcome.explained)),
              highlight=False, markup=False)


def time_spent(result, explained) -> str:
    """"64 s" (the measurement), or "measured 64 s, trials 41 s" when cause trials (and
    "profiles N s" when --explain profiled) ran after it."""
    if explained is None or not explained.wall_s:
        return "%.0f s" % result.wall_s
    profiles = ", profiles %.0f s" % explained.profile_s if explained.profile_s else ""
    return "measured %.0f s%s, trials %.0f s" % (result.wall_s, profiles,
                                                 explained.wall_s - explained.profile_s)


def _finish(args, out, outcome) -> int:
    """Show and store the saved results; the closing line on stderr; the status."""
    try:
        _show(out, outcome)
    except BrokenPipeError:  # `| head`: the measurement is done, it is stored all the same
        store(args, outcome)
        raise
    store(args, outcome)
    result = outcome.result
    if not result.complete:
        print(stopped_line(outcome), file=sys.stderr)
    elif failed_benchmarks(result):
        print("eb-torchperf: error: nothing measured: %s (results written to %s)" % (
            escape.one_line(failed_benchmarks(result)), outcome.results_path), file=sys.stderr)
    elif outcome.status == EXIT_INTERRUPTED:  # after the last measurement: all was kept
        print(interrupted_line(outcome), file=sys.stderr)
    return outcome.status
