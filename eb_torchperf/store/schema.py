"""The results database's tables (SQLAlchemy Core) and their versioned migrations.

Schema history (SCHEMA_VERSION; `eb_torchperf_schema.version` holds a database's):
  1 (2026-12-02): `audits`: one row per stored results document (the document as
    written, its content hash, the build, node type, host, CPU, reference, source).
  2 (2026-12-02): `audit_rows`: one row per analysis row (relative OPS to the reference
    and its 95 % interval, copied from the document's `analysis` section), so history
    and regressions query numbers instead of parsing every document; backfilled from
    the stored documents on upgrade.
  3 (2026-12-03): no new column: `audits.identity` (diagnosis.pooling.identity) names the
    reference environment by what the reference ran with (its probe's `env` fact), not
    by the audit's override options; recomputed from the stored documents on upgrade,
    so audits stored by the EasyBuild hook compare with other builds (issue 31).
A database is upgraded when a newer eb_torchperf opens it (`migrate`): each step runs
in one transaction, under a lock, so two processes upgrading at once do not collide.
The DDL goes through Alembic's operations (`alembic.operations.Operations`), which
write it in each dialect (SQLite, PostgreSQL) without an alembic.ini or script folder
to ship: https://alembic.sqlalchemy.org/en/latest/ops.html
"""

import json

import sqlalchemy as sa
from alembic.migration import MigrationContext
from alembic.operations import Operations

from eb_torchperf.diagnosis.pooling import identity
from eb_torchperf.errors import TorchPerfError
from eb_torchperf.records.measurements import AuditResult

SCHEMA_VERSION = 3
#: Key of the PostgreSQL advisory lock held while migrating ("ebtp" in ASCII).
MIGRATION_LOCK = 0x65627470

metadata = sa.MetaData()

version_table = sa.Table("eb_torchperf_schema", metadata,
                         sa.Column("version", sa.Integer, nullable=False))


def _audit_columns():
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_utc", sa.String(40), nullable=False, index=True),
        sa.Column("stored_utc", sa.String(40), nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("software", sa.String(200), nullable=False, index=True),
        sa.Column("version", sa.String(200), nullable=False),
        sa.Column("toolchain", sa.String(200), nullable=False),
        sa.Column("build", sa.String(400), nullable=False),
        sa.Column("easyconfig", sa.Text, nullable=False),
        sa.Column("node_type", sa.String(200), nullable=False, index=True),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("cpu_model", sa.String(400), nullable=False),
        sa.Column("reference", sa.Text, nullable=False),
        sa.Column("reference_version", sa.String(200), nullable=False),
        sa.Column("identity", sa.Text, nullable=False),
        sa.Column("geomean", sa.Float),
        sa.Column("verdict_level", sa.String(20), nullable=False),
        sa.Column("verdict", sa.Text, nullable=False),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("results_path", sa.Text, nullable=False),
        sa.Column("report_path", sa.Text, nullable=False),
        sa.Column("document", sa.Text, nullable=False),
    ]


def _row_columns():
    return [
        sa.Column("audit_id", sa.Integer, sa.ForeignKey("audits.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("bench", sa.String(200), nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("family", sa.String(100), nullable=False),
        sa.Column("relative_ops", sa.Float),
        sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float),
        sa.Column("estimate", sa.Float),
        sa.Column("inconclusive", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("audit_id", "position"),
    ]


audits = sa.Table("audits", metadata, *_audit_columns())
audit_rows = sa.Table("audit_rows", metadata, *_row_columns())


def row_values(audit_id: int, document: dict) -> list:
    """The audit_rows of a results document: one per `analysis.rows` entry, as stored
    (nothing recomputed); [] when the document has no analysis section."""
    rows = ((document.get("analysis") or {}).get("rows")) or ()
    return [{"audit_id": audit_id, "position": index, "bench": str(row.get("bench", "")),
             "params": json.dumps(row.get("params") or {}, sort_keys=True),
             "family": str(row.get("family") or ""), "relative_ops": row.get("relative_ops"),
             "ci_low": row.get("ci_low"), "ci_high": row.get("ci_high"),
             "estimate": row.get("estimate"), "inconclusive": bool(row.get("inconclusive"))}
            for index, row in enumerate(rows) if isinstance(row, dict)]


def identity_json(document: dict) -> str:
    """diagnosis.pooling.identity of the document, as a JSON list of [field, value]."""
    try:
        pairs = identity(AuditResult.from_json(document))
    except TorchPerfError:
        pairs = []
    return json.dumps([[field, value] for field, value in pairs], sort_keys=True, default=str)


def _to_1(op: Operations, conn) -> None:
    op.create_table("eb_torchperf_schema", sa.Column("version", sa.Integer, nullable=False))
    op.create_table("audits", *_audit_columns())
    conn.execute(version_table.insert().values(version=0))


def _to_2(op: Operations, conn) -> None:
    op.create_table("audit_rows", *_row_columns())
    for audit_id, text in conn.execute(sa.select(audits.c.id, audits.c.document)):
        values = row_values(audit_id, json.loads(text))
        if values:
            conn.execute(audit_rows.insert(), values)


def _to_3(op: Operations, conn) -> None:
    for audit_id, text in conn.execute(sa.select(audits.c.id, audits.c.document)).all():
        conn.execute(audits.update().where(audits.c.id == audit_id)
                     .values(identity=identity_json(json.loads(text))))


#: version -> the step that makes a database of version - 1 into it.
MIGRATIONS = {1: _to_1, 2: _to_2, 3: _to_3}


def current_version(conn) -> int:
    """The schema version of the connected database (0: empty)."""
    if not sa.inspect(conn).has_table("eb_torchperf_schema"):
        return 0
    return int(conn.execute(sa.select(version_table.c.version)).scalar() or 0)


def migrate(conn, target: int = SCHEMA_VERSION) -> int:
    """Bring the database on `conn` (inside a transaction) to `target`; its old version.

    Raises:
        ValueError: the database is newer than this eb_torchperf (its message says so).
    """
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(%d)" % MIGRATION_LOCK))
    found = current_version(conn)
    if found > SCHEMA_VERSION:
        raise ValueError("the database has schema version %d, this eb_torchperf knows up to "
                         "%d: upgrade eb_torchperf" % (found, SCHEMA_VERSION))
    op = Operations(MigrationContext.configure(conn))
    for version in range(found + 1, target + 1):
        MIGRATIONS[version](op, conn)
        conn.execute(version_table.update().values(version=version))
    return found
