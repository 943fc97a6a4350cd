"""The results database: where it is, and importing existing results JSON files.

  eb-torchperf db where                   the database in use and its audits
  eb-torchperf db import PATH...          store results files (a reports/ folder, an
                                          installdir's easybuild/torchperf/) once each

An import is idempotent: a document already stored (same content) is not stored again.
Other JSON files found in a folder are skipped; a file that cannot be read, is not
JSON, or (named on the command line) is not a results document fails, and a results
document with a malformed field is refused, as `report` refuses it: named once, not
stored, exit status 2 (the good files given with it are stored).
--node-type, --software, --version, --toolchain and --build say what the imported
audits are of, where the files cannot (a file from an installdir's
easybuild/torchperf/ is named after that installation when --build is not given).
"""

import os
import sys

from eb_torchperf.records.findings import EXIT_ERROR, EXIT_OK
from eb_torchperf.store import engine as engines
from eb_torchperf.store.context import from_env
from eb_torchperf.store.location import StoreError, database_url, shown
from eb_torchperf.store.query import history
from eb_torchperf.store.write import import_paths


def add_db_argument(parser) -> None:
    parser.add_argument("--db", metavar="PATH|URL",
                        help="results database (default: $EB_TORCHPERF_DB, else "
                             "~/.local/share/eb_torchperf/results.sqlite)")


def add_arguments(parser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    add_db_argument(actions.add_parser("where", help="the database in use and its audits"))
    importing = actions.add_parser("import", help="store results files once each")
    importing.add_argument("paths", nargs="+", metavar="PATH",
                           help="results JSON files, or folders searched for them")
    add_db_argument(importing)
    for name in ("node-type", "software", "version", "toolchain", "build"):
        importing.add_argument("--" + name, metavar="TEXT",
                               help="%s of the imported audits" % name.replace("-", " "))


def engine_of(args):
    """The opened database of --db / EB_TORCHPERF_DB.

    Raises:
        StoreError: storing is off, or the database cannot be opened.
    """
    url = database_url(args.db)
    if url is None:
        raise StoreError("no results database: EB_TORCHPERF_DB (or --db) is off")
    return engines.opened(url)


def _installation_build(path: str) -> str:
    """'PyTorch/2.1.2-foss-2023a' for .../PyTorch/2.1.2-foss-2023a/easybuild/torchperf/x."""
    parts = os.path.abspath(path).split(os.sep)
    if len(parts) > 4 and parts[-3:-1] == ["easybuild", "torchperf"]:
        return "/".join(parts[-5:-3])
    return ""


def _import(args, engine) -> int:
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise StoreError("db import: no such file or folder: %s" % ", ".join(missing))
    counts = {"new": 0, "already stored": 0, "skipped": 0, "refused": 0, "failed": 0}
    for path in args.paths:
        context = from_env("import", args.node_type, software=args.software,
                           version=args.version, toolchain=args.toolchain,
                           build=args.build or _installation_build(path))
        for found, audit_id, what in import_paths(engine, [path], context):
            kind = what.split(":")[0]
            counts[kind] += 1
            # what was not imported is said on stderr, with the exit status
            print(_outcome_line(found, audit_id, what),
                  file=sys.stderr if kind in ("refused", "failed") else sys.stdout)
    print("imported %(new)d new, %(already stored)d already stored, %(skipped)d skipped"
          % counts + "".join(", %d %s" % (counts[key], shown_as) for key, shown_as in (
              ("refused", "refused (malformed)"), ("failed", "failed (not imported)"))
              if counts[key]))
    # a malformed or unreadable file is bad input: exit 2 whatever else was stored
    return EXIT_ERROR if counts["refused"] or counts["failed"] else EXIT_OK


def _outcome_line(path: str, audit_id, what: str) -> str:
    """One line per file: "PATH: audit 3 (new)", or "failed: why" (the path named once)."""
    if audit_id:
        return "%s: audit %d (%s)" % (path, audit_id, what)
    kind, _, why = what.partition(": ")
    return "%s: %s" % (kind, why) if path in why else "%s: %s: %s" % (kind, path, why)


def run(args) -> int:
    engine = engine_of(args)
    if args.action == "import":
        return _import(args, engine)
    audits = history(engine)
    print("%s: %d audits" % (shown(database_url(args.db)), len(audits)))
    return 0
