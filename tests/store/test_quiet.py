"""Storing never needs the database libraries when storing is off, and a Python without
them gets one line, not an internal error (found on the H200 host, whose Python has no
SQLAlchemy: `audit` with EB_TORCHPERF_DB=off exited 3 after saving its results)."""

import ast
import os
import subprocess
import sys

SCRIPT = """
import sys
sys.modules["sqlalchemy"] = None          # import sqlalchemy -> ImportError
from eb_torchperf.store import quiet
from eb_torchperf.store.context import BuildContext
print(repr(quiet.record_quietly(sys.argv[1], BuildContext(), db=sys.argv[2])))
note = quiet.store_and_compare(sys.argv[1], BuildContext())
print(repr(note if note is None else tuple(note.lines)))
"""


def _run(tmp_path, db):
    env = dict(os.environ, EB_TORCHPERF_DB=db)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "r.json"), db],
                          capture_output=True, text=True, env=env, check=True)
    return [ast.literal_eval(line) for line in done.stdout.splitlines()]


def test_off_imports_no_database_library(tmp_path):
    assert _run(tmp_path, "off") == [(None, ""), None]


def test_missing_library_is_one_line(tmp_path):
    (audit_id, line), (compared,) = _run(tmp_path, str(tmp_path / "db.sqlite"))
    assert audit_id is None
    assert line.startswith("eb-torchperf: warning: audit not stored in the results database")
    assert "pip install sqlalchemy alembic" in line and "r.json is kept" in line
    assert compared == line


