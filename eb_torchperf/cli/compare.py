"""Compare two stored audits: A (before, or node type 1) against B (after, node type 2).

The target side of each results file is used; A is the reference (100 %).  The two
runs were not measured interleaved, so relative OPS is a ratio of medians without
an interval (see eb_torchperf.analysis.unpaired).  Findings are diagnosed for B against A.
"""

import pathlib

from eb_torchperf.diagnosis.diagnose import with_findings
from eb_torchperf.records.findings import exit_status
from eb_torchperf.errors import ConfigError
from eb_torchperf.records.measurements import load_results
from eb_torchperf.present.report import parse_formats, write_reports
from eb_torchperf.cli.report import add_common_arguments, print_outcome
from eb_torchperf.present.run_diff import run_differences
from eb_torchperf.analysis.unpaired import UNPAIRED_FLOOR, UNPAIRED_NOTE, combine_runs, unpaired_comparisons
from eb_torchperf.present.terminal import make_console, ops_table


def add_arguments(parser) -> None:
    parser.add_argument("before", metavar="A.json", help="reference run (100 %%)")
    parser.add_argument("after", metavar="B.json", help="run compared against A")
    add_common_arguments(parser)
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where to write the reports (default: next to B.json)")
    parser.add_argument("--stem", help="report file name without suffix "
                                       "(default: compare-<A>-vs-<B>)")


def _usable(path):
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


def run(args) -> int:
    formats = parse_formats(args.format)
    before, after = pathlib.Path(args.before), pathlib.Path(args.after)
    run_a, run_b = _usable(before), _usable(after)
    combined = combine_runs(run_a, run_b)
    differences = run_differences(run_a, run_b)
    comparisons = unpaired_comparisons(combined)
    combined = with_findings(combined, comparisons)
    note = UNPAIRED_NOTE % (before.name, after.name, round(100 * UNPAIRED_FLOOR))
    stem = args.stem or "compare-%s-vs-%s" % (before.stem, after.stem)
    written = write_reports(combined, args.out_dir or after.parent, formats, stem=stem,
                            comparisons=comparisons,
                            notes=(note, "What differs, A → B: " + "; ".join(differences)),
                            title="Stored runs compared: %s (reference) vs %s (target)"
                                  % (before.name, after.name))
    console = make_console()
    console.print(ops_table(comparisons, True, intervals=False))
    console.print(note, highlight=False)
    console.print("What differs, A → B:", highlight=False)
    for line in differences:
        console.print("  " + line, highlight=False, soft_wrap=True)
    print_outcome(console, combined, comparisons, written)
    return exit_status(combined.findings, args.fail_on)
