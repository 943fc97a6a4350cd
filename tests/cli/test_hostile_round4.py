"""Issue 27, the last fresh-user pass: the remaining small failures (a silent exit 0,
a missing line, a traceback-ish exit 3), each reproduced here."""

import json

import pytest

from eb_torchperf import cli
from test_hostile_own import GOLDEN


def test_db_import_of_a_file_that_is_not_json_fails(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    bad = tmp_path / "bad.json"
    bad.write_text("not json")  # was: exit 0, "1 skipped", the name printed twice
    database = str(tmp_path / "db.sqlite")
    assert cli.main(["db", "import", str(bad), "--db", database]) == 2
    assert capsys.readouterr().out == (
        "failed: %s is not JSON: Expecting value: line 1 column 1 (char 0)\n"
        "imported 0 new, 0 already stored, 0 skipped, 1 failed (not imported)\n" % bad)


def test_db_import_stores_the_good_files_and_says_some_failed(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(GOLDEN.read_text())
    bad.write_text("{")
    database = str(tmp_path / "db.sqlite")
    assert cli.main(["db", "import", str(good), str(bad), "--db", database]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "%s: audit 1 (new)" % good
    assert lines[1].startswith("failed: %s is not JSON: " % bad)
    assert lines[2] == "imported 1 new, 0 already stored, 0 skipped, 1 failed (not imported)"
    assert cli.main(["history", "--db", database]) == 0
