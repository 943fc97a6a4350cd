"""Compare two stored audits: A (before, or node type 1) against B (after, node type 2).

The target side of each results file is used; A is the reference (100 %).  The two
runs were not measured interleaved, so relative OPS is a ratio of medians without
an interval (see eb_torchperf.analysis.unpaired).  Findings are diagnosed for B against A.
"""

from eb_torchperf.workflows import stored
from eb_torchperf.present.formats import parse_formats
from eb_torchperf.cli.report import add_common_arguments, print_outcome
from eb_torchperf.present.terminal import make_console, ops_table


def add_arguments(parser) -> None:
    parser.add_argument("before", metavar="A.json", help="reference run (100 %%)")
    parser.add_argument("after", metavar="B.json", help="run compared against A")
    add_common_arguments(parser)
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where to write the reports (default: next to B.json)")
    parser.add_argument("--stem", help="report file name without suffix "
                                       "(default: compare-<A>-vs-<B>)")


def run(args) -> int:
    outcome, note, differences = stored.compare_stored(
        args.before, args.after, args.out_dir, parse_formats(args.format), args.fail_on,
        args.stem)
    console = make_console()
    console.print(ops_table(outcome.comparisons, True, outcome.analysis.geomeans.get("all"),
                            intervals=False))
    console.print(note, highlight=False, markup=False)
    console.print("What differs, A → B:", highlight=False)
    for line in differences:
        console.print("  " + line, highlight=False, soft_wrap=True, markup=False)
    print_outcome(console, outcome.result, outcome.analysis, outcome.written)
    return outcome.status
