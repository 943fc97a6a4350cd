"""A database written by the first schema is read, and written, by this version."""

import json
import pathlib
import sqlite3

import pytest
import sqlalchemy as sa

from store_documents import variant
from eb_torchperf.store import engine as engines, schema
from eb_torchperf.store.context import from_env
from eb_torchperf.store.location import StoreError
from eb_torchperf.store.query import document_of, history, rows_of
from eb_torchperf.store.write import audit_values, record_document

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "data" / "store" / "schema-v1.sql"


def _check_upgraded(engine):
    """The version-1 audit reads back with its rows backfilled from its document."""
    with engine.connect() as conn:
        assert schema.current_version(conn) == schema.SCHEMA_VERSION
    (audit,) = history(engine)
    assert (audit.build, audit.node_type, audit.toolchain) == (
        "PyTorch/2.1.2-foss-2023a", "zen4", "foss-2023a")
    document = document_of(engine, audit.id)
    rows = rows_of(engine, [audit.id])[audit.id]
    assert [(r.bench, r.relative_ops) for r in rows] == [
        (r["bench"], r["relative_ops"]) for r in document["analysis"]["rows"]]
    new_id, new = record_document(engine, variant("2026-12-03T00:00:00+00:00"),
                                  from_env("cli", "zen4", env={}))
    assert new and len(rows_of(engine, [new_id])[new_id]) == len(rows)


def test_the_first_schema_fixture_is_upgraded(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(FIXTURE.read_text())
    _check_upgraded(engines.opened("sqlite:///%s" % path))


def test_a_first_schema_database_on_postgresql_is_upgraded(pg_url):
    with sqlite3.connect(":memory:") as fixture:
        fixture.executescript(FIXTURE.read_text())
        names = [c[1] for c in fixture.execute("PRAGMA table_info(audits)")]
        values = dict(zip(names, fixture.execute("SELECT * FROM audits").fetchone()))
    values["complete"] = bool(values.pop("id") and values["complete"])
    engine = engines.create(pg_url)
    engines.transaction(engine, lambda conn: (schema.migrate(conn, target=1),
                                              conn.execute(schema.audits.insert(), values)))
    _check_upgraded(engines.opened(pg_url))


def test_a_newer_database_is_refused_in_one_line(tmp_path):
    url = "sqlite:///%s" % (tmp_path / "new.sqlite")
    engine = engines.opened(url)
    with engine.begin() as conn:
        conn.execute(schema.version_table.update().values(version=schema.SCHEMA_VERSION + 1))
    with pytest.raises(StoreError, match="schema version %d.*upgrade eb_torchperf"
                       % (schema.SCHEMA_VERSION + 1)):
        engines.opened(url)


def test_schema_3_recomputes_the_identity_of_stored_audits(db_url):
    """An audit stored by the EasyBuild hook under schema 2 named the reference
    environment by the overrides undoing the module; after the upgrade it is what the
    reference ran with (its probe's env fact), as for a CLI audit (issue 31)."""
    hooked = variant("2026-12-03T00:00:00+00:00")
    hooked["options"]["reference_env"] = {"EBROOTPYTORCH": None, "OMP_NUM_THREADS": None}
    engine = engines.opened(db_url)
    audit_id, _ = record_document(engine, hooked, from_env("hook", "zen4", env={}))
    stale = json.dumps([["reference environment", hooked["options"]["reference_env"]]])
    with engine.begin() as conn:
        conn.execute(schema.audits.update().values(identity=stale))
        conn.execute(schema.version_table.update().values(version=2))
    engine.dispose()
    (audit,) = history(engines.opened(db_url))
    assert dict(audit.identity)["reference environment"] == {}
    assert dict(audit.identity)["host"] == "vm"
