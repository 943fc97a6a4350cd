"""Read stored audits back: the history list, its filters, and each audit's rows."""

import dataclasses
import json
from typing import Dict, List, Optional, Sequence, Tuple

import sqlalchemy as sa

from eb_torchperf.store import engine as engines
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


def _audit(row) -> StoredAudit:
    values = dict(row._mapping)
    values["identity"] = tuple((field, value) for field, value in json.loads(values["identity"]))
    values["complete"] = bool(values["complete"])
    return StoredAudit(**values)


def history(engine: sa.engine.Engine, filters: Filters = Filters()) -> List[StoredAudit]:
    """Stored audits matching `filters`, oldest first (by start time, then id).

    Raises:
        StoreError: the database cannot be read.
    """
    statement = (sa.select(*(audits.c[name] for name in FIELDS))
                 .where(*_conditions(filters))
                 .order_by(audits.c.created_utc, audits.c.id))
    return engines.transaction(engine, lambda conn: [_audit(r) for r in conn.execute(statement)],
                               read=True)


def rows_of(engine: sa.engine.Engine, ids: Sequence[int]) -> Dict[int, List[StoredRow]]:
    """The stored analysis rows of each audit id, in the audit's order."""
    if not ids:
        return {}
    statement = (sa.select(audit_rows).where(audit_rows.c.audit_id.in_(list(ids)))
                 .order_by(audit_rows.c.audit_id, audit_rows.c.position))

    def work(conn):
        found: Dict[int, List[StoredRow]] = {i: [] for i in ids}
        for r in conn.execute(statement):
            found[r.audit_id].append(StoredRow(r.bench, r.params, r.family, r.relative_ops,
                                               r.ci_low, r.ci_high, r.estimate))
        return found
    return engines.transaction(engine, work, read=True)


def document_of(engine: sa.engine.Engine, audit_id: int) -> Optional[dict]:
    """The stored results document of one audit, as it was saved; None if no such id."""
    text = engines.transaction(engine, lambda conn: conn.execute(
        sa.select(audits.c.document).where(audits.c.id == audit_id)).scalar(), read=True)
    return json.loads(text) if text is not None else None
