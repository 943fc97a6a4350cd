"""Models vs the micro-suite's prediction, side by side, for audit results.

Usage: .venv/bin/python benchmarks/models_vs_micro.py RESULTS.json [MORE.json ...]
           [--explain EXPLAIN.json]

RESULTS.json is an audit that ran the models and the micro rows (`--suite full`); or
give several audits of the same target and reference (`--suite models` and `--suite
full --only ...` of the micro rows): their rows are pooled; audits of other builds,
hosts, CPUs or environments are refused (eb_torchperf.diagnosis.pooling).
EXPLAIN.json (default: the first file's <stem>.explain.json, as `audit --explain` or
`explain --results` writes it) holds the models' profiles.  Prints per model row: the
measured relative OPS, the micro-suite's prediction
(eb_torchperf.analysis.model_prediction: time-additive and weighted geometric mean), their factor, the profile's own relative OPS ("!" where it is off the
measurement by more than profile_diff.PROFILE_AGREEMENT: the prediction rests on a
profile of a slowed-down step), and the families weighing most; then how many rows
land within 1.5x, and the geometric means.  Exit status 2 with one line on a bad input.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # model_prediction

from eb_torchperf.analysis.compare import compare
from eb_torchperf.errors import TorchPerfError
from eb_torchperf.explain_stage.run import explain_path, load_explain
from eb_torchperf.records.measurements import load_results
from model_prediction import CONV_POINT_ROWS, geomean_pair, predict_all  # noqa: E402
from eb_torchperf.analysis.profile_diff import PROFILE_AGREEMENT
from eb_torchperf.analysis.model_rows import is_model, split
from eb_torchperf.diagnosis.pooling import mismatch, profiles_mismatch, same_audit  # noqa: E402
from eb_torchperf.analysis.stats import geometric_mean


#: The factor issue 17 asks the prediction to land within of each measured model.
WITHIN = 1.5


def _why_nothing(explain_file, explained, comparisons):
    """Why no model row could be predicted, in one line."""
    models = sorted({c.bench for c in comparisons if is_model(c)})
    profiled = [p.workload for p in explained.profiles]
    if not models:
        return ("the results hold no model rows (audit --suite models, or --suite full, "
                "measures them)")
    if not profiled:
        return ("%s holds no profiles (audit --explain, or explain --results FILE, writes "
                "them)" % explain_file)
    if not set(models) & set(profiled):
        return ("%s profiles none of the measured model rows (it profiled %s; explain "
                "--results FILE --workload %s ... profiles them)"
                % (explain_file, ", ".join(profiled), models[0]))
    return ("no micro rows to predict the models from (audit --suite full measures them; "
            "pool it with this audit)")


def _pct(value):
    return "%6.1f %%" % (100 * value) if value is not None else "      —"


def _parse(argv):
    parser = argparse.ArgumentParser(prog="models_vs_micro.py", description=__doc__.split(
        "\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", metavar="RESULTS.json")
    parser.add_argument("--explain", metavar="EXPLAIN.json",
                        help="the models' profiles (default: the first file's "
                             "<stem>.explain.json)")
    args = parser.parse_args(argv[1:])
    if args.explain is None and len(args.results) == 2 and \
            args.results[1].endswith(".explain.json"):
        args.explain = args.results.pop()   # the older form: RESULTS.json EXPLAIN.json
    return args


def main(argv):
    args = _parse(argv)
    explain_file = args.explain or explain_path(args.results[0])
    seen = set()
    for path in args.results:
        if os.path.realpath(path) in seen:
            print("models_vs_micro: error: %s is given twice (pooling a file with itself "
                  "would count its rows twice)" % path, file=sys.stderr)
            return 2
        seen.add(os.path.realpath(path))
    try:
        results = [load_results(path) for path in args.results]
    except TorchPerfError as exc:
        print("models_vs_micro: error: %s" % exc, file=sys.stderr)
        return 2
    try:
        explained = load_explain(explain_file)
    except TorchPerfError as exc:
        hint = "" if args.explain else "; give the models audit first, or --explain FILE"
        print("models_vs_micro: error: %s (profiles come from `eb-torchperf audit --explain` "
              "or `eb-torchperf explain --results FILE`%s)" % (exc, hint), file=sys.stderr)
        return 2
    for path, result in zip(args.results[1:], results[1:]):
        problem = mismatch(path, result, args.results[0], results[0])
        if problem:
            print("models_vs_micro: error: %s" % problem, file=sys.stderr)
            return 2
    for i, (path, result) in enumerate(zip(args.results, results)):
        for earlier_path, earlier in zip(args.results[:i], results[:i]):
            if same_audit(result, earlier):
                print("models_vs_micro: error: %s holds the same audit as %s (started %s): "
                      "pooling it would count its rows twice" % (path, earlier_path,
                                                                 result.created_utc),
                      file=sys.stderr)
                return 2
    first = results[0]
    problem = profiles_mismatch(explain_file, explained, args.results[0], first)
    if problem:
        print("models_vs_micro: error: %s" % problem, file=sys.stderr)
        return 2
    comparisons = [c for result in results for c in compare(result)]
    predictions = predict_all(explained.profiles, comparisons)
    if not predictions:
        print("models_vs_micro: error: %s" % _why_nothing(explain_file, explained, comparisons),
              file=sys.stderr)
        return 2
    print("%-26s %9s %9s %9s %7s %9s  %s" % (
        "model row", "measured", "predicted", "geo-pred", "factor", "profiled",
        "reference time share -> micro relative OPS"))
    for p in predictions:
        families = ", ".join("%s %.0f%%->%.0f%%" % (k, 100 * w, 100 * p.ratios[k])
                             for k, w in sorted(p.weights.items(), key=lambda kv: -kv[1])[:4])
        factor = "%.2fx" % p.factor if p.factor else "—"
        print("%-26s %9s %9s %9s %7s %9s%s %s%s" % (
            p.bench, _pct(p.measured), _pct(p.predicted), _pct(p.predicted_geomean), factor,
            _pct(p.profiled), "!" if p.profile_off else " ", families,
            "; uncovered %.0f%%" % (100 * p.uncovered) if p.uncovered > 0.005 else ""))
    judged = [p for p in predictions if p.factor]
    if judged:
        print("within %.1fx: %d of %d model rows" % (
            WITHIN, sum(p.factor <= WITHIN for p in judged), len(judged)))
    drifted = [p.bench for p in predictions if p.profile_off]
    if drifted:
        print("! the profile's own relative OPS is more than %.2fx off the audit's for %s: "
              "the host ran a side slower while profiling, so the prediction from it is "
              "weak; profile again (eb-torchperf explain --results FILE --workload NAME)"
              % (PROFILE_AGREEMENT, ", ".join(drifted)))
    measured, predicted = geomean_pair(predictions)
    micro = [c.relative_ops for c in split(comparisons)[1] if c.relative_ops is not None]
    print("geometric mean: models %s, micro-suite prediction %s, plain micro-suite %s "
          "(%d rows)" % (_pct(measured).strip(), _pct(predicted).strip(),
                         _pct(geometric_mean(micro) if micro else None).strip(), len(micro)))
    blind = [c for c in comparisons if c.bench in CONV_POINT_ROWS and c.target is not None
             and not c.target.kernels]
    if blind:
        print("note: %d convolution row(s) recorded no kernels (results written before "
              "eb_torchperf recorded them): their convolutions are priced without the path "
              "the target took; re-run the audit for a path-aware prediction" % len(blind))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
