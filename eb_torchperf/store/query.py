"""Read stored audits back: the history list, its filters, and each audit's rows."""

import dataclasses
import json
import math
from typing import Dict, List, Optional, Sequence, Tuple

import sqlalchemy as sa

from eb_torchperf.store import engine as engines
from eb_torchperf.store.location import StoreError
from eb_torchperf.store.schema import audit_rows, audits

#: The `audits` columns a StoredAudit carries (the document stays in the database).
FIELDS = ("id", "created_utc", "source", "software", "version", "toolchain", "build",
          "easyconfig", "node_type", "host", "cpu_model", "reference", "reference_version",
          "identity", "geomean", "verdict_level", "verdict", "complete", "results_path",
          "report_path")


@dataclasses.dataclass(frozen=True)
class StoredAudit:
    """One stored audit without its document (see schema.audits for the columns);
    `identity` is diagnosis.pooling.identity as ((field, value), ...); geomean is the
    stored geometric mean of relative OPS (ratio, 1.0 = the reference), or None."""

    id: int
    created_utc: str
    source: str
    software: str
    version: str
    toolchain: str
    build: str
    easyconfig: str
    node_type: str
    host: str
    cpu_model: str
    reference: str
    reference_version: str
    identity: Tuple[Tuple[str, object], ...]
    geomean: Optional[float]
    verdict_level: str
    verdict: str
    complete: bool
    results_path: str
    report_path: str


@dataclasses.dataclass(frozen=True)
class StoredRow:
    """One analysis row as stored: relative OPS (ratio) and its 95 % interval; None when
    the row was inconclusive (then `estimate` keeps the figure) or not measured on both
    sides."""

    bench: str
    params: str
    family: str
    relative_ops: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    estimate: Optional[float] = None

    @property
    def value(self) -> Optional[float]:
        """relative_ops, else the inconclusive row's estimate (its interval is wide)."""
        return self.estimate if self.relative_ops is None else self.relative_ops

    @property
    def key(self) -> Tuple[str, str]:
        return self.bench, self.params

    @property
    def is_model(self) -> bool:
        """A whole-model row (family "cpu/model", "cuda/model")."""
        return self.family.endswith("/model")


@dataclasses.dataclass(frozen=True)
class Filters:
    """History filters; None matches everything.  `version` may end in "*" (a prefix);
    `since`/`until` are ISO dates or times (UTC), compared with the audit's start."""

    software: Optional[str] = None
    version: Optional[str] = None
    toolchain: Optional[str] = None
    node_type: Optional[str] = None
    since: Optional[str] = None
    until: Optional[str] = None


def _conditions(filters: Filters) -> list:
    found = []
    for name in ("software", "toolchain", "node_type"):
        value = getattr(filters, name)
        if value is not None:
            found.append(audits.c[name] == value)
    if filters.version is not None:
        version = filters.version
        found.append(audits.c.version.like(version[:-1] + "%") if version.endswith("*")
                     else audits.c.version == version)
    if filters.since:
        found.append(audits.c.created_utc >= filters.since)
    if filters.until:
        found.append(audits.c.created_utc <= filters.until + "\uffff")
    return found


class Audits(list):
    """history's audits; `unreadable`: the ids of rows that a hand edit of the database
    left unreadable (a geomean that is not a number, an identity that is not JSON, an
    analysis row's figure that is not a number), skipped."""

    unreadable: Tuple[int, ...] = ()


class Rows(dict):
    """rows_of's rows by audit id; `unreadable`: the ids whose rows were not numbers."""

    unreadable: Tuple[int, ...] = ()


def _number(value) -> Optional[float]:
    """A stored figure (None stays None).

    Raises:
        ValueError: not a finite number (SQLite keeps any text a hand edit put there).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise ValueError("not a number: %r" % (value,))
    return float(value)


def _audit(row) -> Optional[StoredAudit]:
    """The StoredAudit of a row; None when a hand edit left it unreadable."""
    values = dict(row._mapping)
    try:
        values["identity"] = tuple((str(field), value)
                                   for field, value in json.loads(values["identity"]))
        values["geomean"] = _number(values["geomean"])
    except (TypeError, ValueError):
        return None
    values["complete"] = bool(values["complete"])
    if not all(isinstance(values[name], str) for name in FIELDS if name not in (
            "id", "identity", "geomean", "complete")):
        return None
    return StoredAudit(**values)


def history(engine: sa.engine.Engine, filters: Filters = Filters()) -> Audits:
    """Stored audits matching `filters`, oldest first (by start time, then id); the ids
    of unreadable rows in `.unreadable`.

    Raises:
        StoreError: the database cannot be read.
    """
    statement = (sa.select(*(audits.c[name] for name in FIELDS))
                 .where(*_conditions(filters))
                 .order_by(audits.c.created_utc, audits.c.id))

    def work(conn) -> Audits:
        found, unreadable = Audits(), []
        for r in conn.execute(statement):
            audit = _audit(r)
            if audit is None:
                unreadable.append(r.id)
            else:
                found.append(audit)
        found.unreadable = tuple(unreadable)
        return found
    return engines.transaction(engine, work, read=True)


def _row(r) -> StoredRow:
    """Raises ValueError: a figure that is not a number."""
    return StoredRow(str(r.bench), str(r.params), str(r.family), *(
        _number(v) for v in (r.relative_ops, r.ci_low, r.ci_high, r.estimate)))


def rows_of(engine: sa.engine.Engine, ids: Sequence[int]) -> Rows:
    """The stored analysis rows of each audit id, in the audit's order (an audit with
    an unreadable row: left out, its id in `.unreadable`)."""
    if not ids:
        return Rows()
    statement = (sa.select(audit_rows).where(audit_rows.c.audit_id.in_(list(ids)))
                 .order_by(audit_rows.c.audit_id, audit_rows.c.position))

    def work(conn) -> Rows:
        found, unreadable = Rows((i, []) for i in ids), set()
        for r in conn.execute(statement):
            try:
                found[r.audit_id].append(_row(r))
            except ValueError:
                unreadable.add(r.audit_id)
        for audit_id in unreadable:
            del found[audit_id]
        found.unreadable = tuple(sorted(unreadable))
        return found
    return engines.transaction(engine, work, read=True)


def readable(engine: sa.engine.Engine, filters: Filters = Filters()) -> Tuple[
        List[StoredAudit], Dict[int, List[StoredRow]], Tuple[int, ...]]:
    """(the readable audits matching `filters`, their rows, the ids of the unreadable
    ones, sorted).

    Raises:
        StoreError: the database cannot be read, or no matching audit is readable.
    """
    found = history(engine, filters)
    rows = rows_of(engine, [a.id for a in found])
    return checked([a for a in found if a.id in rows], rows,
                   set(found.unreadable) | set(rows.unreadable))


def checked(audits: List[StoredAudit], rows, unreadable) -> Tuple[
        List[StoredAudit], Dict[int, List[StoredRow]], Tuple[int, ...]]:
    """(audits, rows, the unreadable ids sorted) of `readable`.

    Raises:
        StoreError: no audit is readable and some are not.
    """
    unreadable = tuple(sorted(unreadable))
    if unreadable and not audits:
        raise StoreError("no readable audit in the results database (%s: a field edited by "
                         "hand?)" % _ids(unreadable))
    return audits, rows, unreadable


def _ids(ids: Sequence[int]) -> str:
    return "audit%s %s" % ("s" if len(ids) > 1 else "", ", ".join(map(str, ids)))


def unreadable_warning(ids: Sequence[int]) -> str:
    """The one warning line of skipped unreadable audits ("" when none)."""
    return ("eb-torchperf: warning: skipped %s: unreadable in the results database (a field "
            "edited by hand?)" % _ids(ids)) if ids else ""


def document_of(engine: sa.engine.Engine, audit_id: int) -> Optional[dict]:
    """The stored results document of one audit, as it was saved; None if no such id.

    Raises:
        ValueError: the stored document is not JSON (a hand edit).
    """
    text = engines.transaction(engine, lambda conn: conn.execute(
        sa.select(audits.c.document).where(audits.c.id == audit_id)).scalar(), read=True)
    return json.loads(text) if text is not None else None
