"""Issue 27, the fresh-user pass after the merge (a clean clone, 60 hostile cases): the
cases that failed, each reproduced here (exit 3 or a silent wrong answer before)."""

import json
import os
import pathlib
import sys

import pytest

from eb_torchperf import cli
from test_hostile_own import GOLDEN, _one_error_line


def test_deeply_nested_json_is_bad_input(tmp_path, capsys):
    nested = tmp_path / "deep.json"
    nested.write_text("[" * 100000 + "]" * 100000)  # valid JSON; json.load recursed (exit 3)
    assert cli.main(["report", str(nested), "--format", "md"]) == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: %s is not a results document: nested too deeply\n" % nested)


def test_results_without_a_target_side_are_refused(tmp_path, capsys):
    document = json.loads(GOLDEN.read_text())
    document["target"] = None  # the rows stay: it read "OK: no reference measured"
    edited = tmp_path / "no-target.json"
    edited.write_text(json.dumps(document))
    assert cli.main(["report", str(edited), "--format", "md"]) == 2
    assert "results were measured but the target side is None" in _one_error_line(capsys)


def test_db_import_refuses_what_report_refuses(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    document = json.loads(GOLDEN.read_text())
    document["target"]["facts"]["math"] = "x"  # report: exit 2; import stored it
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    database = tmp_path / "db.sqlite"
    assert cli.main(["db", "import", str(bad), "--db", str(database)]) != 0
    out = capsys.readouterr()
    assert "math" in out.out + out.err and "(new)" not in out.out


def test_an_out_that_is_a_link_to_an_existing_file_is_refused(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("")
    link = tmp_path / "link.json"
    link.symlink_to(elsewhere)  # the rename replaced the link; the file stayed empty
    status = cli.main(["audit", "--python", sys.executable, "--reference", "none", "--quiet",
                       "--pairs", "1", "--only", "dispatch", "--device", "cpu",
                       "--out", str(link)])
    assert status == 2
    assert "it is a symbolic link (to %s)" % elsewhere in _one_error_line(capsys)
    assert link.is_symlink() and elsewhere.read_text() == ""


def test_sources_without_easybuild_says_what_to_install(tmp_path, capsys, monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "easybuild" else real(name, *a))
    easyconfig = pathlib.Path(__file__).parents[2] / "easyconfigs" / "PyTorch-2.13.0-wheel.eb"
    assert cli.main(["sources", "--list", str(easyconfig), str(tmp_path)]) == 2
    assert "needs EasyBuild to read easyconfigs" in _one_error_line(capsys)
    assert os.listdir(tmp_path) == []


def test_a_full_stdout_is_named(tmp_path):
    import subprocess
    with open("/dev/full", "w") as full:  # a redirection only: the device is not touched
        done = subprocess.run([sys.executable, "-m", "eb_torchperf.cli", "report", str(GOLDEN),
                               "--format", "md", "--out-dir", str(tmp_path)],
                              stdout=full, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, COLUMNS="100"))
    assert done.returncode == 2
    assert done.stderr == ("eb-torchperf: error: cannot write to standard output: No space "
                           "left on device\n")


def test_a_missing_home_gets_no_database_folder(tmp_path, monkeypatch):
    from eb_torchperf.store.context import BuildContext
    from eb_torchperf.store.quiet import record_quietly
    home = tmp_path / "nonexistent" / "zz"  # was created, with .local/share/eb_torchperf
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("EB_TORCHPERF_DB", raising=False)
    audit_id, line = record_quietly(str(tmp_path / "run.json"), BuildContext())
    assert audit_id is None and not (tmp_path / "nonexistent").exists()
    assert line == ("eb-torchperf: warning: audit not stored in the results database (the "
                    "default results database is under the home folder %s, which does not "
                    "exist; set EB_TORCHPERF_DB (a path, a URL, or off)); the results JSON "
                    "%s is kept" % (home, tmp_path / "run.json"))
