"""Store results documents: one row per document, idempotent by content hash.

A document is stored as it was saved (its `analysis` section included); the columns
are read from it, never recomputed.  The same document stored twice (an import run
again, a fleet gathered twice, one audit from the hook and from an import of its
installdir) is one row: its SHA-256 over the canonical JSON is unique.
"""

import dataclasses
import datetime
import hashlib
import json
import os
from typing import Iterable, Iterator, List, Optional, Tuple

import sqlalchemy as sa

from eb_torchperf.errors import SchemaError, TorchPerfError
from eb_torchperf.records.measurements import AuditResult, read_json
from eb_torchperf.store import engine as engines
from eb_torchperf.store.context import BuildContext, completed
from eb_torchperf.store.location import StoreError, shown
from eb_torchperf.store.quiet import not_stored
from eb_torchperf.store.schema import audit_rows, audits, identity_json, row_values

#: Results file names an import takes from a folder: *.json except these.
NOT_RESULTS = (".explain.json", "verdict.json", "manifest.json", "regressions.json")


def content_hash(document: dict) -> str:
    """SHA-256 (hex) of the document's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _side(document: dict, side: str, section: str, key: str) -> str:
    probe = document.get(side) or {}
    return str(((probe.get("facts") or {}).get(section) or {}).get(key) or "")


def audit_values(document: dict, context: BuildContext) -> dict:
    """The `audits` row of a document (context completed from the document)."""
    context = completed(context, document)
    analysis = document.get("analysis") or {}
    verdict = analysis.get("verdict") or {}
    reference = document.get("reference") or {}
    return dict(
        dataclasses.asdict(context), content_hash=content_hash(document),
        created_utc=str(document.get("created_utc") or ""),
        stored_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        host=str(document.get("host") or ""),
        cpu_model=_side(document, "target", "cpu", "model"),
        reference=str(reference.get("python") or "none"),
        reference_version=_side(document, "reference", "torch", "version"),
        identity=identity_json(document), geomean=analysis.get("geomean_relative_ops"),
        verdict_level=str(verdict.get("level") or ""), verdict=str(verdict.get("text") or ""),
        complete=bool(document.get("complete", True)),
        document=json.dumps(document, sort_keys=True, default=str))


def record_document(engine: sa.engine.Engine, document: dict,
                    context: BuildContext) -> Tuple[int, bool]:
    """Store one results document; (audit id, True when new, False when already stored).

    Raises:
        StoreError: the database cannot be written.
    """
    values = audit_values(document, context)

    def work(conn) -> Tuple[int, bool]:
        found = conn.execute(sa.select(audits.c.id).where(
            audits.c.content_hash == values["content_hash"])).scalar()
        if found is not None:
            return int(found), False
        audit_id = int(conn.execute(audits.insert().values(**values)).inserted_primary_key[0])
        rows = row_values(audit_id, document)
        if rows:
            conn.execute(audit_rows.insert(), rows)
        return audit_id, True

    try:
        return engines.transaction(engine, work)
    except StoreError:
        # two writers of one document at once: the other one's row is the row
        again = engines.transaction(engine, lambda conn: conn.execute(sa.select(audits.c.id).where(
            audits.c.content_hash == values["content_hash"])).scalar())
        if again is None:
            raise
        return int(again), False


class DocumentError(StoreError):
    """A file given to store is not a readable results document (the database is fine)."""


class UnreadableDocument(DocumentError):
    """A file given to store that cannot be read or is not JSON: an import failure."""


class InvalidDocument(DocumentError):
    """A results document that `report` would refuse too (a field of the wrong type):
    bad input, never stored."""


def read_document(path: str) -> dict:
    """The JSON document in `path`.

    Raises:
        DocumentError: not a results document (no target side), or one of an audit that
            measured nothing (its target did not start: stored, it read "torch ? ...
            ok" in `history`); UnreadableDocument when unreadable or not JSON,
            InvalidDocument when `report` would refuse it.
    """
    document = read_json(path, UnreadableDocument)
    if not isinstance(document, dict) or "schema_version" not in document or (
            "target" not in document or "results" not in document):
        raise DocumentError("%s is not an eb-torchperf results document" % path)
    if not document["target"] or not document["results"]:
        raise DocumentError("%s holds an audit that measured nothing" % path)
    try:
        AuditResult.from_json(document)  # what `report` refuses is not stored either
    except SchemaError as exc:
        raise InvalidDocument(str(exc)) from None
    return document


def record_file(engine: sa.engine.Engine, path: str, context: BuildContext,
                report_path: str = "") -> Tuple[int, bool]:
    """Store the results JSON `path` (see record_document); the report defaults to the
    HTML report beside it (same stem), when there is one."""
    document = read_document(path)
    if not report_path:
        html = os.path.splitext(path)[0] + ".html"
        report_path = html if os.path.isfile(html) else ""
    context = dataclasses.replace(context, results_path=os.path.abspath(path),
                                  report_path=report_path and os.path.abspath(report_path))
    return record_document(engine, document, context)


def results_files(paths: Iterable[str]) -> Iterator[str]:
    """Every results JSON under `paths` (files as given; folders searched recursively,
    skipping explain, verdict, fleet manifest and regressions files), sorted."""
    for path in paths:
        if os.path.isdir(path):
            found = []
            for folder, _, names in os.walk(path):
                found.extend(os.path.join(folder, n) for n in names
                             if n.endswith(".json") and not n.endswith(NOT_RESULTS))
            yield from sorted(found)
        else:
            yield path


def record_at(url: str, path: str, context: BuildContext,
              report_path: str = "") -> Tuple[Optional[int], str]:
    """Store a just-written results JSON in the database at `url` without ever failing
    the audit (store.quiet.record_quietly is the entry): (audit id or None, one line
    for the user: where it was stored, or what was not stored and why)."""
    try:
        engine = engines.opened(url)
        audit_id, new = record_file(engine, path, context, report_path)
    except (TorchPerfError, sa.exc.SQLAlchemyError, OSError) as exc:
        return None, not_stored(path, exc)
    return audit_id, "stored as audit %d in %s%s" % (audit_id, shown(url),
                                                        "" if new else " (already there)")


def import_paths(engine: sa.engine.Engine, paths: Iterable[str],
                 context: BuildContext) -> List[Tuple[str, Optional[int], str]]:
    """Import results files: (path, audit id or None, "new" | "already stored" | why it
    was not: "failed: ..." (unreadable, not JSON, or a file named that is not a results
    document), "refused: ..." (malformed) or "skipped: ..." (other JSON found in a
    folder)) per file found."""
    outcomes = []
    paths = list(paths)
    for path in results_files(paths):
        try:
            audit_id, new = record_file(engine, path, context)
        except InvalidDocument as exc:
            outcomes.append((path, None, "refused: %s" % exc))
            continue
        except DocumentError as exc:
            failed = isinstance(exc, UnreadableDocument) or path in paths
            outcomes.append((path, None, "%s: %s" % ("failed" if failed else "skipped", exc)))
            continue
        outcomes.append((path, audit_id, "new" if new else "already stored"))
    return outcomes
