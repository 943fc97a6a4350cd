"""Compare each stored build with the previous build of the same software on the same
node type, per row and per model, with the 95 % intervals both audits carried.

Only audits that the pooling checks allow are compared: the same host, CPU, reference
torch build and reference environment (diagnosis.pooling); otherwise the line says
what differs.  A row is slower when the whole interval of new / previous lies below
95 %.  Exit status 1 when a build (the newest per node type with --latest) is slower.
"""

from rich.table import Table

from eb_torchperf.cli.db import engine_of
from eb_torchperf.cli.history import add_filter_arguments, filters_of, warn_unreadable
from eb_torchperf.present.terminal import make_console
from eb_torchperf.present.units import format_ratio
from eb_torchperf.store.buildcheck import summary
from eb_torchperf.store.query import readable
from eb_torchperf.store.regress import comparisons


def add_arguments(parser) -> None:
    add_filter_arguments(parser)
    parser.add_argument("--latest", action="store_true",
                        help="only the newest audit of each software and node type")
    parser.add_argument("--all-rows", action="store_true",
                        help="list every compared row, not only the slower and faster ones")


def _cell(value) -> str:
    return "%s [%s–%s]" % tuple(format_ratio(v) for v in value)


def rows_table(comparison, all_rows: bool) -> Table:
    view = Table(title="%s against %s" % (comparison.audit.build, comparison.previous.build))
    for column in ("row", "kind", "previous vs reference", "new vs reference",
                   "new / previous", "95 % interval", ""):
        view.add_column(column)
    for r in comparison.rows:
        if all_rows or r.slower or r.faster:
            view.add_row(r.bench, "model" if r.is_model else "micro", _cell(r.previous),
                         _cell(r.new), format_ratio(r.ratio),
                         "%s–%s" % (format_ratio(r.low), format_ratio(r.high)),
                         "SLOWER" if r.slower else "faster" if r.faster else "")
    return view


def run(args) -> int:
    engine = engine_of(args)
    audits, rows, unreadable = readable(engine, filters_of(args))
    warn_unreadable(unreadable)
    found = comparisons(audits, rows)
    if args.latest:
        newest = {(c.audit.software, c.audit.node_type): c for c in found}
        found = list(newest.values())
    out = make_console()
    slower = 0
    for comparison in found:
        out.print("audit %d: %s" % (comparison.audit.id, summary(comparison)),
                  highlight=False, markup=False)
        if comparison.rows and (args.all_rows or any(r.slower or r.faster
                                                     for r in comparison.rows)):
            out.print(rows_table(comparison, args.all_rows))
        slower += bool(comparison.slower_rows)
    if not found:
        out.print("no stored audit matches", highlight=False)
    return 1 if slower else 0
