"""Run N A/A audits (one interpreter against itself) and tabulate how far each row strays.

Usage:
  python benchmarks/aa_table.py [--runs N] [--python PY] [--device cpu|cuda|all]
                                [--suite quick|full] [--only BENCH ...] [--markdown FILE]
                                [--save DIR]
  python benchmarks/aa_table.py --from DIR [--markdown FILE]   (re-judge saved runs)

Per row: the relative OPS of every run ("inc." where the row was inconclusive), the
worst |1 - ratio| over the conclusive runs, the median 95 % interval half-width (log
scale, as a percentage), the pairs it got (adaptive rounds) and how often it was
inconclusive or significant; then the wall time and inconclusive count per run, and
the issue-16 acceptance checks (every row within ±5 % or inconclusive, the median
half-width of the CPU rows).  The same figure measured the same way on any host; it is
a benchmark, not a test: run it on a quiet machine.
"""

import argparse
import dataclasses
import collections
import datetime
import glob
import math
import os
import platform
import statistics
import sys
import time
import typing

from eb_torchperf.analysis.compare import AA_FLOOR, compare, needs_more_pairs
from eb_torchperf.errors import TorchPerfError
from eb_torchperf.records.measurements import load_results
from eb_torchperf.measure.interleave import (SUITE_OPTIONS, AuditRun, RunnerOptions,
                                             allowed_cores)
from eb_torchperf.probe import registry

DEVICES = {"cpu": ("cpu",), "cuda": ("cuda",), "all": ("cpu", "cuda")}
#: RunnerOptions fields an A/A table sets itself.
FIXED_OPTIONS = ("allow_same_torch",)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="A/A audits to run (default 3)")
    parser.add_argument("--python", default=sys.executable, help="interpreter audited")
    parser.add_argument("--device", choices=sorted(DEVICES), default="cpu")
    parser.add_argument("--suite", choices=sorted(SUITE_OPTIONS), default="quick")
    parser.add_argument("--only", action="append", metavar="BENCH")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="override a RunnerOptions field for the experiment, e.g. "
                             "block_s=0.02 (repeatable; the table says which were set)")
    parser.add_argument("--save", metavar="DIR",
                        help="also keep each run's raw results (every sample) as DIR/aa-N.json")
    parser.add_argument("--from", dest="from_dir", metavar="DIR",
                        help="measure nothing: tabulate the runs saved earlier with --save "
                             "in DIR (DIR/aa-N.json) under the current rules (wall time: "
                             "each audit's own)")
    args = parser.parse_args(argv)
    if args.from_dir and not sorted(glob.glob(os.path.join(args.from_dir, "aa-*.json"))):
        parser.error("--from %s: no aa-N.json runs there" % args.from_dir)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    base = SUITE_OPTIONS[args.suite]
    names = sorted(f.name for f in dataclasses.fields(base))
    args.overrides = {}
    for item in args.option:
        name, _, value = item.partition("=")
        if not _:
            parser.error("--option %s: expected NAME=VALUE" % item)
        if name not in names or name in FIXED_OPTIONS:
            parser.error("--option %s: NAME must be one of %s" % (
                item, ", ".join(n for n in names if n not in FIXED_OPTIONS)))
        if not value:
            parser.error("--option %s: give a value after '='" % item)
        args.overrides[name] = _option_value(parser, item, getattr(base, name), value,
                                             _field_type(name))
        if isinstance(args.overrides[name], (int, float)) and \
                not isinstance(args.overrides[name], bool) and args.overrides[name] < 0:
            parser.error("--option %s: give a value >= 0" % item)
    try:
        dataclasses.replace(base, **args.overrides)
    except ValueError as exc:
        parser.error("--option: %s" % exc)
    if args.markdown:
        folder = os.path.dirname(os.path.abspath(args.markdown))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            parser.error("--markdown %s: no writable folder %s" % (args.markdown, folder))
    if args.save:
        if os.path.exists(args.save) and not os.path.isdir(args.save):
            parser.error("--save %s: exists and is not a folder" % args.save)
        if glob.glob(os.path.join(args.save, "aa-*.json")):
            parser.error("--save %s: holds aa-N.json runs already (give a new folder; they "
                         "are never replaced)" % args.save)
        try:
            os.makedirs(args.save, exist_ok=True)
        except OSError as exc:
            parser.error("--save %s: cannot create the folder: %s" % (args.save, exc.strerror))
    return args


def _field_type(name):
    """The declared type of RunnerOptions field `name` (int for Optional[int])."""
    hint = typing.get_type_hints(RunnerOptions)[name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


def _option_value(parser, item, current, value, declared=None):
    """`value` as the type of the RunnerOptions field whose default is `current` (or,
    for a field whose default is None, its `declared` type)."""
    if isinstance(current, bool):
        lowered = value.lower()
        if lowered not in ("1", "true", "yes", "0", "false", "no"):
            parser.error("--option %s: give 1/true/yes or 0/false/no" % item)
        return lowered in ("1", "true", "yes")
    kind = type(current) if current is not None else (declared or float)
    try:
        converted = kind(value)
    except ValueError:
        parser.error("--option %s: %r is not a%s %s" % (item, value,
                                                      "n" if kind is int else "", kind.__name__))
    if isinstance(converted, float) and not math.isfinite(converted):
        parser.error("--option %s: give a finite number" % item)
    return converted


def half_width_pct(c):
    if c.ci_low is None or c.ci_high is None:
        return None
    return 100 * (math.exp((math.log(c.ci_high) - math.log(c.ci_low)) / 2) - 1)


def _add_run(rows, runs, result, wall_s):
    comparisons = compare(result)
    runs.append({"wall_s": wall_s, "inconclusive": sum(c.inconclusive for c in comparisons),
                 "torch": (result.target.facts.get("torch", {}).get("version", "?")
                           if result.target else "?")})
    for c in comparisons:
        key = "%s %s" % (c.bench, registry.params_json(c.params))
        rows.setdefault(key, {"device": registry.REGISTRY[c.bench].device, "runs": []})
        rows[key]["runs"].append(c)


def collect(args, say):
    rows = collections.OrderedDict()
    runs = []
    for index in range(args.runs):
        began = time.monotonic()
        options = dataclasses.replace(SUITE_OPTIONS[args.suite], allow_same_torch=True,
                                      **args.overrides)
        result = AuditRun(args.python, args.python, args.suite, options, only=args.only,
                          devices=DEVICES[args.device], judge=needs_more_pairs).run()
        if args.save:  # the folder was made by parse_args
            result.save(os.path.join(args.save, "aa-%d.json" % (index + 1)))
        if not result.complete:
            say("run %d incomplete: %s" % (index + 1, result.errors[-1]["message"]))
        _add_run(rows, runs, result, time.monotonic() - began)
        runs[-1]["complete"] = result.complete
        say("run %d/%d: %.0f s, %d inconclusive" % (index + 1, args.runs, runs[-1]["wall_s"],
                                                   runs[-1]["inconclusive"]))
    return rows, runs


def collect_saved(folder):
    """Rows, runs and the first AuditResult of the aa-N.json results saved in `folder`,
    in N order.

    Raises:
        TorchPerfError: a file that is not an audit results document.
    """
    rows, runs, first = collections.OrderedDict(), [], None
    paths = glob.glob(os.path.join(folder, "aa-*.json"))
    def number(path):
        return int("".join(ch for ch in os.path.basename(path) if ch.isdigit()) or 0)
    for path in sorted(paths, key=number):
        result = load_results(path)
        first = first or result
        _add_run(rows, runs, result, result.wall_s)
    return rows, runs, first


def table_lines(rows, runs):
    header = ["row", "relative OPS per run (%)", "worst |dev| %", "median ± %", "pairs",
              "inconclusive", "significant"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for key, row in rows.items():
        cs = row["runs"]
        values = ["inc." if c.inconclusive else
                  ("%.1f" % (100 * c.relative_ops) if c.relative_ops is not None else "-")
                  for c in cs]
        devs = [abs(1 - c.relative_ops) for c in cs if c.relative_ops is not None]
        halves = [h for h in (half_width_pct(c) for c in cs) if h is not None]
        pairs = sorted(c.pairs for c in cs)
        lines.append("| %s | %s | %s | %s | %s | %d | %d |" % (
            key.replace("|", "/"), " ".join(values),
            "%.1f" % (100 * max(devs)) if devs else "-",
            "%.1f" % statistics.median(halves) if halves else "-",
            "%d" % pairs[0] if pairs[0] == pairs[-1] else "%d-%d" % (pairs[0], pairs[-1]),
            sum(c.inconclusive for c in cs), sum(c.significant for c in cs)))
    return lines


def summary_lines(rows, runs):
    out = ["", "| run | wall s | inconclusive rows |", "|---|---|---|"]
    out += ["| %d | %.1f | %d |" % (i + 1, r["wall_s"], r["inconclusive"])
            for i, r in enumerate(runs)]
    out.append("")
    for device in ("cpu", "cuda"):
        cs = [c for row in rows.values() if row["device"] == device for c in row["runs"]]
        if not cs:
            continue
        outside = [c for c in cs if c.relative_ops is not None
                   and abs(1 - c.relative_ops) > AA_FLOOR]
        halves = [h for h in (half_width_pct(c) for c in cs) if h is not None]
        out.append("- %s rows: %d row-runs, %d outside ±%.0f %% and conclusive, %d inconclusive, "
                   "%d significant; median interval half-width %.1f %%" % (
                       device, len(cs), len(outside), 100 * AA_FLOOR,
                       sum(c.inconclusive for c in cs), sum(c.significant for c in cs),
                       statistics.median(halves) if halves else float("nan")))
    out.append("- most inconclusive rows in one run: %d; wall time per run: max %.1f s"
               % (max(r["inconclusive"] for r in runs), max(r["wall_s"] for r in runs)))
    return out


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    if args.from_dir:
        registry.load_suites()
        try:
            rows, runs, result = collect_saved(args.from_dir)
        except TorchPerfError as exc:
            print("aa_table: error: %s" % exc, file=sys.stderr)
            return 2
        args.python = result.target.python if result.target else "?"
        args.suite, args.runs = result.suite, len(runs)
        args.device = "saved runs in %s" % args.from_dir
        args.host, args.cores = result.host or "?", "?"
    else:
        if not os.path.exists(args.python):
            print("aa_table: error: no interpreter at %s" % args.python, file=sys.stderr)
            return 2
        try:
            registry.plan(args.suite, DEVICES[args.device], args.only)
        except ValueError as exc:
            print("aa_table: error: %s" % exc, file=sys.stderr)
            return 2
        rows, runs = collect(args, say)
        args.host, args.cores = platform.node(), allowed_cores()
    head = ["# A/A table: %s against itself" % args.python, "",
            "%s; %s suite, --device %s, %d runs; host %s, %s allowed cores; torch %s; %s" % (
                "benchmarks/aa_table.py", args.suite, args.device, args.runs,
                args.host, args.cores, runs[0]["torch"],
                datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
            ""]
    if args.overrides:
        options = ", ".join("%s=%s" % kv for kv in sorted(args.overrides.items()))
        head[-1:] = ["options set: " + options, ""]
    text = "\n".join(head + table_lines(rows, runs) + summary_lines(rows, runs)) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(text)
    incomplete = [i + 1 for i, r in enumerate(runs) if not r.get("complete", True)]
    if incomplete:
        say("aa_table: error: run%s %s incomplete (see above): the table is not an A/A "
            "figure" % ("s" if len(incomplete) > 1 else "", ", ".join(map(str, incomplete))))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
