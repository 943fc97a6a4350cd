"""Storing results documents: as given, once, with the build and node type."""

import json

import pytest
import sqlalchemy as sa

from store_documents import example_document, variant, write
from eb_torchperf.cli.dispatch import main
from eb_torchperf.store import engine as engines
from eb_torchperf.store.context import from_env
from eb_torchperf.store.location import database_url, default_path, shown
from eb_torchperf.store.query import Filters, document_of, history, rows_of
from eb_torchperf.store.write import content_hash, record_document


def test_database_url_from_path_url_off_and_default(tmp_path):
    assert database_url("rel.sqlite", {}).startswith("sqlite:////")
    assert database_url("postgresql://u:pw@h/db", {}) == "postgresql+psycopg://u:pw@h/db"
    assert database_url("off", {}) is None
    assert database_url(None, {"EB_TORCHPERF_DB": "none"}) is None
    assert database_url(None, {"XDG_DATA_HOME": str(tmp_path)}) == (
        "sqlite:///%s/eb_torchperf/results.sqlite" % tmp_path)
    assert default_path({"XDG_DATA_HOME": "/x"}) == "/x/eb_torchperf/results.sqlite"
    assert shown("postgresql+psycopg://u:secret@h/db") == "postgresql+psycopg://u:***@h/db"


def test_a_document_is_stored_as_given_with_its_rows(db_url):
    engine = engines.opened(db_url)
    document = example_document()
    context = from_env("cli", "zen4", env={"SLURM_JOB_PARTITION": "ignored"})
    audit_id, new = record_document(engine, document, context)
    assert new and document_of(engine, audit_id) == document
    (audit,) = history(engine)
    assert (audit.node_type, audit.version, audit.host) == ("zen4", "1.13.0a0", "vm")
    assert audit.build == "torch 1.13.0a0 @ /usr/bin/python3"
    assert audit.geomean == document["analysis"]["geomean_relative_ops"]
    assert audit.verdict_level == document["analysis"]["verdict"]["level"]
    assert dict(audit.identity)["host"] == "vm"
    stored = rows_of(engine, [audit_id])[audit_id]
    rows = document["analysis"]["rows"]
    assert [(r.bench, r.relative_ops, r.ci_low, r.ci_high) for r in stored] == [
        (r["bench"], r["relative_ops"], r["ci_low"], r["ci_high"]) for r in rows]


def test_the_same_document_twice_is_one_row(db_url):
    engine = engines.opened(db_url)
    first = record_document(engine, example_document(), from_env("cli", "a", env={}))
    again = record_document(engine, example_document(), from_env("import", "b", env={}))
    assert again == (first[0], False)
    assert len(history(engine)) == 1


def test_node_type_and_module_come_from_the_environment():
    env = {"SLURM_JOB_PARTITION": "genoa", "EBROOTPYTORCH": "/sw/PyTorch/2.1.2-foss-2023a",
           "EBVERSIONPYTORCH": "2.1.2"}
    context = from_env("fleet", env=env)
    assert (context.node_type, context.version, context.toolchain, context.build) == (
        "genoa", "2.1.2", "foss-2023a", "PyTorch/2.1.2-foss-2023a")
    assert from_env(env=dict(env, EB_TORCHPERF_NODE_TYPE="zen4")).node_type == "zen4"


def test_history_filters(db_url):
    engine = engines.opened(db_url)
    for created, node in (("2026-01-01T00:00:00+00:00", "zen"), ("2026-02-01T00:00:00+00:00",
                                                                 "grace")):
        record_document(engine, variant(created), from_env("cli", node, env={}))
    assert [a.node_type for a in history(engine, Filters(node_type="grace"))] == ["grace"]
    assert len(history(engine, Filters(since="2026-01-15"))) == 1
    assert len(history(engine, Filters(until="2026-01-01"))) == 1
    assert len(history(engine, Filters(version="1.13*"))) == 2
    assert history(engine, Filters(version="2.*")) == []


def test_db_import_is_idempotent_and_skips_other_files(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "reports"
    write(folder / "a.json", variant("2026-01-01T00:00:00+00:00"))
    write(folder / "sub" / "b.json", variant("2026-01-02T00:00:00+00:00"))
    write(folder / "a.explain.json", {"not": "results"})
    write(folder / "junk.json", {"schema_version": 2})
    monkeypatch.setenv("EB_TORCHPERF_DB", str(tmp_path / "db.sqlite"))
    assert main(["db", "import", str(folder), "--node-type", "zen"]) == 0
    assert "imported 2 new, 0 already stored, 1 skipped" in capsys.readouterr().out
    assert main(["db", "import", str(folder)]) == 0
    assert "imported 0 new, 2 already stored, 1 skipped" in capsys.readouterr().out
    assert main(["history"]) == 0
    assert capsys.readouterr().out.count("zen") == 2


def test_content_hash_ignores_key_order():
    document = example_document()
    reordered = json.loads(json.dumps(document, sort_keys=True))
    assert content_hash(document) == content_hash(reordered)
    assert content_hash(document) != content_hash(variant("2026-01-01T00:00:00+00:00"))


def test_an_unusable_database_is_one_line(tmp_path, capsys):
    assert main(["history", "--db", "postgresql://nobody@127.0.0.1:1/none"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "127.0.0.1" in err and "Traceback" not in err
