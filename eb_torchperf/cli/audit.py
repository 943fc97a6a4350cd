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
audit cut short (results and reports so far are still written).
"""

import dataclasses
import datetime
import os
import pathlib
import re
import signal
import sys

from eb_torchperf.analysis import compare as compare_mod
from eb_torchperf.measure.interleave import SUITE_OPTIONS, AuditRun
from eb_torchperf.present.configdiff import config_rows
from eb_torchperf.diagnosis.diagnose import with_findings
from eb_torchperf.errors import ConfigError
from eb_torchperf.workflows.explain import ProfileOptions, explain, explain_path, with_profile_evidence
from eb_torchperf.records.findings import exit_status
from eb_torchperf.probe import registry
from eb_torchperf.measure.reference import resolve_interpreter, resolve_reference
from eb_torchperf.present.report import parse_formats, write_reports
from eb_torchperf.cli.report import add_common_arguments, print_outcome
from eb_torchperf.present.terminal import AuditProgress, config_table, make_console, ops_table
from eb_torchperf.present.terminal_explain import ExplainProgress, print_explain

DEFAULT_OUT_DIR = "reports"
#: A POSIX environment variable name (--target-env VAR=VALUE).
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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
    parser.add_argument("--python", default="python3", metavar="TARGET",
                        help="interpreter whose torch is audited (default: python3 on PATH)")
    parser.add_argument("--reference", default="wheel", metavar="REF",
                        help="interpreter, wheel, wheel==X.Y.Z, FILE.whl or none "
                             "(default: wheel)")
    parser.add_argument("--suite", choices=sorted(SUITE_OPTIONS), default="quick",
                        help="quick (~1 min on 2 cores) or full (several minutes)")
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
                             "audit stops before measuring (exit 2)")
    parser.add_argument("--pairs", type=int, help="fresh worker pairs (default by suite)")
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


def _options(args):
    options = SUITE_OPTIONS[args.suite]
    if args.timeout <= 0:
        raise ConfigError("--timeout must be > 0 seconds, not %g" % args.timeout)
    if args.pairs is not None and args.pairs < 1:
        raise ConfigError("--pairs must be at least 1, not %d" % args.pairs)
    changes = {"request_timeout_s": args.timeout, "start_timeout_s": args.timeout,
               "allow_same_torch": args.allow_same_torch,
               "keep_reference_env": args.keep_reference_env}
    if args.pairs is not None:
        changes["pairs"] = args.pairs
    try:
        return dataclasses.replace(options, **changes)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def parse_env(assignments, option: str = "--target-env") -> dict:
    """["VAR=VALUE", "VAR2="] -> {"VAR": "VALUE", "VAR2": None} (empty value: remove).

    Raises:
        ConfigError: an item without "=" or whose name is not a variable name.
    """
    env = {}
    for item in assignments:
        name, sep, value = item.partition("=")
        if not sep or not ENV_NAME.fullmatch(name):
            raise ConfigError("%s wants VAR=VALUE with VAR a variable name (letters, "
                              "digits, _; not starting with a digit), not %r" % (option, item))
        env[name] = value or None
    return env


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


def default_out_path() -> str:
    """reports/torchperf-<UTC time>.json relative to the working directory."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return os.path.join(DEFAULT_OUT_DIR, "torchperf-%s.json" % stamp)


def _measure(args, err):
    """Resolve both interpreters, run the audit with a progress bar; the AuditResult."""
    try:  # before a reference venv is built: a plan with nothing in it is a usage error
        planned = {name for name, _ in registry.plan(args.suite, DEVICES[args.device],
                                                     args.only)}
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    dropped = [name for name in dict.fromkeys(args.only or ()) if name not in planned]
    if dropped:
        where = ["%s runs in the %s suite on %s" % (name, registry.REGISTRY[name].suites,
                                                   registry.REGISTRY[name].device)
                 for name in dropped]
        raise ConfigError("--only %s: not in the %s suite on %s (%s)" % (
            ", ".join(dropped), args.suite, "/".join(DEVICES[args.device]), "; ".join(where)))
    target = resolve_interpreter(args.python, "target")
    target_env = parse_env(args.target_env)
    reference_extra = parse_env(args.reference_env, "--reference-env")
    options = _options(args)
    reference = resolve_reference(args.reference, target, args.pip_option,
                                  args.cache_dir and pathlib.Path(args.cache_dir),
                                  log=lambda msg: err.print(msg, highlight=False),
                                  env=reference_extra)
    try:
        audit = AuditRun(target, reference, args.suite, options, only=args.only,
                         devices=DEVICES[args.device], target_env=target_env,
                         reference_env_extra=reference_extra)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.quiet:
        return audit.run()
    audit.progress = AuditProgress(err, len(audit.plan) * audit.options.pairs)
    with audit.progress:
        return audit.run()


def _explain(result, path: pathlib.Path, args, err):
    """Profile diff of a complete audit, saved beside its results JSON at `path`.

    Returns:
        (result with the findings annotated, ExplainResult); without --explain, or for
        an audit cut short, (result, None).
    """
    if not (args.explain and result.complete):
        return result, None
    kwargs = dict(results_file=str(path.resolve()), try_remedies=False,
                  profile_options=ProfileOptions(request_timeout_s=args.timeout))
    if args.quiet:
        explained = explain(result, **kwargs)
    else:
        with ExplainProgress(err) as progress:
            explained = explain(result, progress=progress, **kwargs)
    explained.save(explain_path(path))
    return with_profile_evidence(result, explained), explained


def check_writable(path: pathlib.Path) -> None:
    """Make sure the results file can be written, before anything is measured.

    Raises:
        ConfigError: the folder cannot be created or the file cannot be opened.
    """
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as exc:
        raise ConfigError("cannot write results to %s: %s" % (path, exc.strerror or exc)) from None
    if not existed:
        path.unlink()


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _measure_keeping_results(args, err):
    """_measure with SIGTERM (Slurm's scancel and time limit) handled like Ctrl-C: the
    audit stops, and what was measured is returned and written."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return _measure(args, err)
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args) -> int:
    formats = tuple(f for f in parse_formats(args.format) if f != "json")
    if args.explain and args.reference in ("", "none"):
        raise ConfigError("--explain needs a reference to profile against; "
                          "leave out --reference none")
    out, err = make_console(), make_console(stderr=True)
    path = pathlib.Path(args.out or default_out_path())
    check_writable(path)
    result = _measure_keeping_results(args, err)
    comparisons = compare_mod.compare(result)
    result = with_findings(result, comparisons)
    result.save(path)
    result, explained = _explain(result, path, args, err)
    if explained is not None:
        result.save(path)
    written = write_reports(result, path.parent, formats, stem=path.stem,
                            comparisons=comparisons, explain=explained) if formats else {}
    if result.target is not None:
        out.print(config_table(config_rows(result.target, result.reference),
                               result.reference is not None))
    if comparisons:
        out.print(ops_table(comparisons, result.reference is not None))
    if explained is not None:
        print_explain(out, explained)
    for line in skip_lines(result.skipped):
        out.print(line, highlight=False)
    print_outcome(out, result, comparisons, written)
    out.print("results: %s  (%.0f s)" % (path, result.wall_s), highlight=False)
    if not result.complete:
        message = result.errors[-1]["message"]
        print("eb-torchperf: error: %s (results so far written to %s)" % (message, path),
              file=sys.stderr)
        return 130 if message == "audit interrupted" else 2
    return exit_status(result.findings, args.fail_on)
