"""List the audits stored in the results database, or write them as a static site.

  eb-torchperf history                               every stored audit, oldest first
  eb-torchperf history --software PyTorch --version '2.*' --node-type zen4
  eb-torchperf history --since 2026-11-01 --html site/   the offline HTML history

--html writes index.html (per node type: relative OPS to the reference per build over
time, as inline SVG charts; the regressions table; a link to each audit's report):
no network is needed to view it.
"""

import argparse
import datetime
import sys

from rich.table import Table

from eb_torchperf.cli.db import add_db_argument, engine_of
from eb_torchperf.present.terminal import make_console
from eb_torchperf.present.units import format_ratio
from eb_torchperf.store.query import Filters, checked, history, unreadable_warning


def add_filter_arguments(parser) -> None:
    """The history filters, shared with `regressions`."""
    add_db_argument(parser)
    parser.add_argument("--software", help="software name, e.g. PyTorch")
    parser.add_argument("--version", help="version, or a prefix ending in * ('2.*')")
    parser.add_argument("--toolchain", help="toolchain, e.g. foss-2023a")
    parser.add_argument("--node-type", help="node type (Slurm partition)")
    parser.add_argument("--since", metavar="DATE", type=utc_time,
                        help="audits started on or after (UTC; 2026-11-01 or 2026-11-01T08:00)")
    parser.add_argument("--until", metavar="DATE", type=utc_time,
                        help="audits started on or before (UTC; a date includes its day)")


def utc_time(text: str) -> str:
    """--since/--until: an ISO 8601 date or time, as the stored start times are written
    ("2026-11-01", "2026-11-01T08:00:00"; a time with an offset is taken to UTC), so
    that comparing the text compares the times.

    Raises:
        argparse.ArgumentTypeError: not an ISO date or time ("12/03/2026", "yesterday":
            compared as text they matched everything or nothing, silently).
    """
    try:
        if len(text) == 10:
            return datetime.date.fromisoformat(text).isoformat()
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "%r is not an ISO date or time (YYYY-MM-DD or YYYY-MM-DDTHH:MM)" % text) from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


def filters_of(args) -> Filters:
    return Filters(software=args.software, version=args.version, toolchain=args.toolchain,
                   node_type=args.node_type, since=args.since, until=args.until)


def add_arguments(parser) -> None:
    add_filter_arguments(parser)
    parser.add_argument("--html", metavar="DIR", help="write the static HTML history into DIR")


def table(audits) -> Table:
    """One line per audit: id, start, node type, build, toolchain, geometric mean, verdict."""
    view = Table(title="Stored audits (relative OPS: reference = 100 %)")
    for column in ("id", "started (UTC)", "node type", "build", "toolchain", "host",
                   "reference", "geo. mean", "verdict", "source"):
        view.add_column(column, justify="right" if column in ("id", "geo. mean") else "left")
    for a in audits:
        view.add_row(str(a.id), a.created_utc[:19], a.node_type or "-", a.build,
                     a.toolchain or "-", a.host, "torch %s" % (a.reference_version or "-"),
                     format_ratio(a.geomean) or "-", a.verdict_level or "-", a.source)
    return view


def warn_unreadable(ids) -> None:
    """The one warning line naming the unreadable audits skipped (none: nothing)."""
    if ids:
        print(unreadable_warning(ids), file=sys.stderr)


def run(args) -> int:
    engine = engine_of(args)
    if args.html:
        from eb_torchperf.store.site import write_site
        index, shown, unreadable = write_site(engine, filters_of(args), args.html)
        warn_unreadable(unreadable)
        print("history: %s (%d audits)" % (index, shown))
        return 0
    found = history(engine, filters_of(args))
    audits, _, unreadable = checked(found, {}, found.unreadable)
    warn_unreadable(unreadable)
    out = make_console()
    if not audits:
        out.print("no stored audit matches", highlight=False)
        return 0
    out.print(table(audits))
    return 0
