"""Regressions between builds: each build against the previous one on its node type."""

import json

import pytest

from store_documents import variant, write
from eb_torchperf.cli.dispatch import main
from eb_torchperf.store import engine as engines
from eb_torchperf.store.buildcheck import store_and_compare
from eb_torchperf.store.context import from_env
from eb_torchperf.store.query import history, rows_of
from eb_torchperf.store.regress import MARGIN, comparisons
from eb_torchperf.store.write import record_document

OLD, NEW = "2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00"


def _stored(db_url, *documents, node="zen"):
    engine = engines.opened(db_url)
    for document in documents:
        record_document(engine, document, from_env("cli", node, env={}))
    audits = history(engine)
    return comparisons(audits, rows_of(engine, [a.id for a in audits]))


def test_a_slower_build_names_its_rows_with_intervals(db_url):
    first, second = _stored(db_url, variant(OLD, "/old/bin/python"),
                            variant(NEW, "/new/bin/python", scale={"matmul_fp32": 0.2}))
    assert first.previous is None and second.previous.build.endswith("/old/bin/python")
    (slower,) = second.slower_rows
    assert slower.bench == "matmul_fp32"
    assert slower.ratio == pytest.approx(0.2)
    assert slower.low == pytest.approx(0.2 * slower.previous[1] / slower.previous[2])
    assert slower.high < 1 - MARGIN
    assert all(not r.slower for r in second.rows if r.bench != "matmul_fp32")


def test_a_hook_audit_is_compared_with_a_cli_audit_of_another_build(db_url):
    """The EasyBuild hook hands the reference overrides that undo the module (issue 31:
    its modextravars OMP_NUM_THREADS=1 among them); the reference ran as a CLI audit's
    did (same probe `env` fact), so the builds are compared."""
    hooked = variant(NEW, "/sw/PyTorch/bin/python", scale={"matmul_fp32": 0.2})
    hooked["options"]["reference_env"] = {"EBROOTPYTORCH": None, "OMP_NUM_THREADS": None,
                                          "PATH": "/usr/bin:/bin", "_ModuleTable001_": "X01"}
    first, second = _stored(db_url, variant(OLD, "/old/bin/python"), hooked)
    assert second.reason == ""
    assert [r.bench for r in second.slower_rows] == ["matmul_fp32"]


def test_a_reference_run_with_other_settings_is_not_compared(db_url):
    threads = variant(NEW, "/new/bin/python")
    threads["reference"]["facts"]["env"] = {"OMP_NUM_THREADS": "1"}
    first, second = _stored(db_url, variant(OLD, "/old/bin/python"), threads)
    assert second.rows == ()
    assert second.reason == ("the reference environment differs ({'OMP_NUM_THREADS': '1'} "
                             "against {}): not compared")


def test_a_re_audit_of_one_build_is_not_a_previous_build(db_url):
    found = _stored(db_url, variant(OLD), variant(NEW, scale={"matmul_fp32": 0.2}))
    assert [c.previous for c in found] == [None, None]


def test_other_node_types_and_hosts_are_never_compared(db_url):
    moved = variant(NEW, "/new/bin/python")
    moved["host"] = "other-node"
    engine = engines.opened(db_url)
    record_document(engine, variant(OLD, "/old/bin/python"), from_env("cli", "zen", env={}))
    record_document(engine, variant(NEW, "/x/bin/python"), from_env("cli", "grace", env={}))
    record_document(engine, moved, from_env("cli", "zen", env={}))
    audits = history(engine)
    found = {c.audit.build: c for c in comparisons(audits, rows_of(engine, [a.id for a in audits]))}
    assert found["torch 1.13.0a0 @ /x/bin/python"].previous is None
    assert found["torch 1.13.0a0 @ /new/bin/python"].rows == ()
    assert found["torch 1.13.0a0 @ /new/bin/python"].reason == (
        "the host differs (other-node against vm): not compared")


def test_the_regressions_command_exits_1_and_names_the_build(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EB_TORCHPERF_DB", str(tmp_path / "db.sqlite"))
    for name, document in (("a", variant(OLD, "/old/bin/python")),
                           ("b", variant(NEW, "/new/bin/python", scale={"softmax": 0.5}))):
        assert main(["db", "import", write(tmp_path / (name + ".json"), document),
                     "--node-type", "zen"]) == 0
    capsys.readouterr()
    assert main(["regressions", "--latest"]) == 1
    out = capsys.readouterr().out
    assert "torch 1.13.0a0 @ /new/bin/python is significantly slower" in out
    assert "softmax at 50.0 %" in out and "SLOWER" in out


@pytest.mark.parametrize("mode, fail", [("warn", False), ("fail", True)])
def test_a_build_check_stores_compares_and_follows_the_policy(tmp_path, monkeypatch, mode, fail):
    monkeypatch.setenv("EB_TORCHPERF_DB", str(tmp_path / "db.sqlite"))
    old = write(tmp_path / "old" / "torchperf.json", variant(OLD, "/old/bin/python"))
    new = write(tmp_path / "new" / "torchperf.json",
                variant(NEW, "/new/bin/python", scale={"gelu": 0.5}))
    context = from_env("hook", "zen", env={})
    assert not store_and_compare(old, context, env={}).regressed
    note = store_and_compare(new, context, env={"EB_TORCHPERF_REGRESSION": mode})
    assert note.regressed and note.fail == fail
    assert note.lines[0].startswith("stored as audit 2 in sqlite:///")
    assert "gelu at 50.0 %" in note.lines[-1]
    written = json.loads((tmp_path / "new" / "regressions.json").read_text())
    assert written["previous_build"] == "torch 1.13.0a0 @ /old/bin/python"
