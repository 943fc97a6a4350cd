"""An unreachable or read-only database never loses an audit: the results JSON is
written, the exit status is the audit's, and one line says what was not stored."""

import json

import pytest

from store_documents import EXAMPLE
from eb_torchperf.cli.dispatch import main
from eb_torchperf.records.measurements import load_results
from eb_torchperf.workflows import pipeline


@pytest.fixture
def measured(monkeypatch):
    """`audit` whose measuring step returns the example audit (no torch worker), its
    start time one second later per run."""
    runs = []

    def run(request, display=pipeline.Display()):
        document = json.loads(EXAMPLE.read_text())
        document["created_utc"] = "2026-12-02T00:00:%02d+00:00" % len(runs)
        runs.append(request.out)
        with open(request.out, "w") as handle:
            json.dump(document, handle)
        result = load_results(request.out)
        return pipeline.PipelineOutcome(result, pipeline.analyse(result), results_path=request.out,
                                        status=pipeline.status_of(result, request.fail_on))
    monkeypatch.setattr(pipeline, "run", run)


def _audit(tmp_path, name, db):
    out = tmp_path / (name + ".json")
    status = main(["audit", "--python", "/usr/bin/python3", "--out", str(out), "--quiet",
                   "--format", "md", "--db", db])
    return status, out


@pytest.mark.parametrize("db, why", [
    ("postgresql://nobody@127.0.0.1:1/results", "127.0.0.1"),
    ("sqlite:///file:{tmp}/ro.sqlite?mode=ro&uri=true", "unable to open database file"),
])
def test_an_unusable_database_keeps_the_audit_and_its_status(tmp_path, capsys, measured, db, why):
    expected, kept = _audit(tmp_path, "off", "off")
    assert "not stored" not in capsys.readouterr().err
    status, out = _audit(tmp_path, "broken", db.format(tmp=tmp_path))
    err = capsys.readouterr().err
    assert status == expected == 1  # the example's blas-not-mkl error finding
    assert load_results(out).results == load_results(kept).results
    (line,) = [l for l in err.splitlines() if "not stored" in l]
    assert why in line and str(out) in line and "Traceback" not in err


@pytest.mark.parametrize("db, why", [
    ("/etc/passwd/results.sqlite", "cannot use /etc/passwd for the database: it is not a "
                                   "folder"),
    ("/etc/passwd", "cannot use /etc/passwd for the database: it is not an SQLite database"),
    ("bogus://x", "cannot use the database bogus://x: Can't load plugin"),
])
def test_an_unusable_db_option_is_refused_before_measuring(tmp_path, capsys, measured, db, why,
                                                             monkeypatch):
    status, out = _audit(tmp_path, "refused", db)
    err = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert err.startswith("eb-torchperf: error: --db " + why) and err.count("\n") == 1
    # the same database from EB_TORCHPERF_DB is not the user's explicit choice for this
    # run (a site default): the audit runs and keeps its status, one line says why
    monkeypatch.setenv("EB_TORCHPERF_DB", db)
    status = main(["audit", "--python", "/usr/bin/python3", "--out", str(tmp_path / "env.json"),
                   "--quiet", "--format", "md"])
    assert status == 1 and "not stored" in capsys.readouterr().err


def test_a_read_only_existing_database_keeps_the_audit(tmp_path, capsys, measured):
    writable = tmp_path / "db.sqlite"
    assert _audit(tmp_path, "first", str(writable))[0] == 1
    assert "stored as audit 1" in capsys.readouterr().err
    status, out = _audit(tmp_path, "second", "sqlite:///file:%s?mode=ro&uri=true" % writable)
    assert status == 1 and out.is_file()
    (line,) = [l for l in capsys.readouterr().err.splitlines() if "not stored" in l]
    assert "readonly database" in line
