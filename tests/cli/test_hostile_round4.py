"""Issue 27, the last fresh-user pass: the remaining small failures (a silent exit 0,
a missing line, a traceback-ish exit 3), each reproduced here."""

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from eb_torchperf import cli
from test_hostile_own import GOLDEN


def test_db_import_of_a_file_that_is_not_json_fails(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    bad = tmp_path / "bad.json"
    bad.write_text("not json")  # was: exit 0, "1 skipped", the name printed twice
    database = str(tmp_path / "db.sqlite")
    assert cli.main(["db", "import", str(bad), "--db", database]) == 2
    printed = capsys.readouterr()  # what failed on stderr, with the exit status
    assert printed.err == "failed: %s is not JSON: Expecting value: line 1 column 1 (char 0)\n" % bad
    assert printed.out == "imported 0 new, 0 already stored, 0 skipped, 1 failed (not imported)\n"


def test_db_import_stores_the_good_files_and_says_some_failed(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(GOLDEN.read_text())
    bad.write_text("{")
    database = str(tmp_path / "db.sqlite")
    assert cli.main(["db", "import", str(good), str(bad), "--db", database]) == 2
    printed = capsys.readouterr()
    assert printed.out.splitlines() == [
        "%s: audit 1 (new)" % good,
        "imported 1 new, 0 already stored, 0 skipped, 1 failed (not imported)"]
    assert printed.err.startswith("failed: %s is not JSON: " % bad)
    assert cli.main(["db", "where", "--db", database]) == 0
    assert capsys.readouterr().out == "sqlite:///%s: 1 audits\n" % database


def _audit(*extra) -> int:
    return cli.main(["audit", "--python", sys.executable, "--reference", "none", "--quiet",
                     "--suite", "quick", "--pairs", "1", "--only", "dispatch",
                     "--device", "cpu", *extra])


@pytest.mark.parametrize("when", ["before storing", "after storing"])
def test_an_interrupt_around_storing_names_the_results(tmp_path, monkeypatch, capsys,
                                                        wheel_python, when):
    pytest.importorskip("sqlalchemy")
    from eb_torchperf.store import quiet
    real = quiet.record_quietly

    def ctrl_c(*args, **kwargs):  # before: no path printed; after: exit 130 and no reason
        if when == "before storing":
            os.kill(os.getpid(), signal.SIGINT)
        stored = real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return stored

    monkeypatch.setattr(quiet, "record_quietly", ctrl_c)
    monkeypatch.setenv("EB_TORCHPERF_DB", str(tmp_path / "db.sqlite"))
    out = tmp_path / "run.json"
    assert _audit("--out", str(out)) == 130
    assert capsys.readouterr().err == (
        "eb-torchperf: interrupted after the measurement (results written to %s)\n" % out)
    assert json.loads(out.read_text())["complete"] is True


def test_a_reader_that_stops_early_does_not_lose_the_stored_audit(tmp_path, capsys,
                                                                   wheel_python):
    pytest.importorskip("sqlalchemy")
    import subprocess
    database, out = tmp_path / "db.sqlite", tmp_path / "run.json"
    proc = subprocess.Popen(  # `audit | head -1`: exit 141, and nothing was stored
        [sys.executable, "-m", "eb_torchperf.cli", "audit", "--python", wheel_python,
         "--reference", "none", "--quiet", "--suite", "quick", "--pairs", "1", "--only",
         "dispatch", "--device", "cpu", "--out", str(out), "--db", str(database)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # the reader is gone before the first table
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 141, err
    assert err == "stored as audit 1 in sqlite:///%s\n" % database
    assert cli.main(["db", "where", "--db", str(database)]) == 0
    assert capsys.readouterr().out == "sqlite:///%s: 1 audits\n" % database
    assert json.loads(out.read_text())["complete"] is True


def _hand_edited(tmp_path, *edits) -> str:
    """A results database of three audits of the golden file, then `edits` (SQL)."""
    import sqlite3
    document = json.loads(GOLDEN.read_text())
    paths = []
    for month in (1, 2, 3):
        document["created_utc"] = "2027-0%d-01T00:00:00+00:00" % month
        paths.append(tmp_path / ("%d.json" % month))
        paths[-1].write_text(json.dumps(document))
    database = str(tmp_path / "db.sqlite")
    assert cli.main(["db", "import", *map(str, paths), "--db", database]) == 0
    with sqlite3.connect(database) as connection:
        for edit in edits:
            connection.execute(edit)
    return database


@pytest.mark.parametrize("command, skipped, shown", [
    (["history"], "audit 2", ["2027-01-01", "2027-03-01"]),
    (["regressions"], "audit 2", ["audit 1:", "audit 3:"]),
    (["history", "--html"], "audits 2, 3", ["(1 audits)"])])  # only the site reads documents
def test_hand_edited_database_rows_are_skipped_and_named(tmp_path, capsys, command, skipped,
                                                         shown):
    pytest.importorskip("sqlalchemy")
    database = _hand_edited(tmp_path, "update audits set geomean = 'abc' where id = 2",
                            "update audits set document = '{broken' where id = 3")
    capsys.readouterr()
    site = [str(tmp_path / "site")] if "--html" in command else []
    assert cli.main([*command, *site, "--db", database]) == 0  # was: exit 3, "internal error"
    out, err = capsys.readouterr()
    assert err == ("eb-torchperf: warning: skipped %s: unreadable in the results database (a "
                   "field edited by hand?)\n" % skipped)
    assert all(text in out for text in shown) and "2027-02-01" not in out, out


def test_a_database_with_nothing_readable_is_one_line(tmp_path, capsys):
    pytest.importorskip("sqlalchemy")
    database = _hand_edited(tmp_path, "update audits set identity = '[[' ")
    capsys.readouterr()
    assert cli.main(["regressions", "--db", database]) == 2
    assert capsys.readouterr().err == (
        "eb-torchperf: error: no readable audit in the results database (audits 1, 2, 3: a "
        "field edited by hand?)\n")


def test_a_torch_folder_in_the_working_folder_is_not_imported(tmp_path, monkeypatch, capsys,
                                                              wheel_python):
    fake = tmp_path / "torch"
    fake.mkdir()  # the worker imported ./torch: `-m` puts the current folder first
    (fake / "__init__.py").write_text("raise ImportError('the fake torch of the cwd')\n")
    (tmp_path / "ebtp_probe").mkdir()  # nor a probe package of the same name
    (tmp_path / "ebtp_probe" / "__init__.py").write_text("raise SystemExit(9)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EB_TORCHPERF_DB", "off")
    assert _audit("--out", str(tmp_path / "run.json")) == 0, capsys.readouterr().err
    import torch
    document = json.loads((tmp_path / "run.json").read_text())
    assert document["target"]["facts"]["torch"]["version"] == torch.__version__


@pytest.mark.parametrize("db, xdg, expected", [
    ("", None, "HOME/.local/share"),  # set but empty: was "storing off", silently
    ("  ", "XDG", "XDG"),
    (None, "relative/data", "HOME/.local/share"),  # was a folder under the cwd
    ("", "relative/data", "HOME/.local/share")])
def test_an_empty_db_variable_or_a_relative_xdg_folder_means_the_default(tmp_path, monkeypatch,
                                                                         db, xdg, expected):
    from eb_torchperf.store.location import database_url
    home, data = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    env = {"HOME": str(home)}
    env.update({} if db is None else {"EB_TORCHPERF_DB": db})
    env.update({} if xdg is None else {"XDG_DATA_HOME": str(data) if xdg == "XDG" else xdg})
    folder = expected.replace("HOME", str(home)).replace("XDG", str(data))
    monkeypatch.setenv("HOME", str(home))  # expanduser reads os.environ
    assert database_url(env=env) == "sqlite:///%s/eb_torchperf/results.sqlite" % folder


def _processes_with(text: str) -> list:
    """The pids whose environment holds `text` (a fault's mark path)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/environ" % pid, "rb") as handle:
                if text.encode() in handle.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_sigquit_stops_the_audit_like_sigterm(tmp_path, wheel_python):
    # Ctrl-\ : was a core dump, an empty --out and the hung worker left running
    from test_hostile_round2 import interrupt_hung_audit

    def hung_worker_exists(mark):
        assert _processes_with(str(mark))
    mark = interrupt_hung_audit(tmp_path, wheel_python, signal.SIGQUIT, hung_worker_exists)
    assert _processes_with(str(mark)) == []


RUNNER = """
import sys, time
from eb_torchperf.measure.runner import ProbeBundle, Worker
from eb_torchperf.measure.zygote import Zygote
bundle = ProbeBundle().__enter__()
worker = Worker(sys.argv[1], bundle.path)
worker.start()
zygote = Zygote(sys.argv[1], bundle.path)
zygote.start()
forked = zygote.fork_worker("target")
forked.wait_started()
for busy in (worker, forked):  # a request each, at which they hang: no end of input seen
    busy.proc.stdin.write(b'{"op": "facts"}\\n')
    busy.proc.stdin.flush()
print(worker.proc.pid, zygote.proc.pid, forked.proc.pid, bundle.path, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_a_runner_killed_outright(tmp_path, wheel_python):
    import subprocess
    import time
    from faults import faulty_python
    python = faulty_python(tmp_path, wheel_python, "hang", at=1)
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, python],
                              stdout=subprocess.PIPE, text=True)
    try:
        *pids, bundle = runner.stdout.readline().split()
        pids = [int(pid) for pid in pids]
        assert len(pids) == 3 and all(map(_alive, pids))
    finally:
        runner.kill()  # kill -9: no cleanup in the runner; the workers ran on, orphaned
        runner.wait()
    deadline = time.monotonic() + 30
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:  # the old code: do not leave them running after the test
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(bundle)
    assert left == []


# -- the fresh-user pass after the fixes above (2026-12-03) --------------------------


def test_an_interrupt_after_main_returned_is_ignored():
    # `timeout -s INT` landing after the last line: exit 130 and no line (3 of 25 tries)
    code = ("import os, signal, sys, time\n"
            "from eb_torchperf.cli import dispatch\n"
            "dispatch.main = lambda: 0  # an audit that has finished\n"
            "status = dispatch.console_main()\n"
            "os.kill(os.getpid(), signal.SIGINT)\n"
            "time.sleep(0.2)\n"
            "print('exit', status)\n"
            "sys.exit(status)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "exit 0\n", "")


@pytest.mark.parametrize("date", ["notadate", "2026-13-45", "12/03/2026", "yesterday"])
def test_history_refuses_a_date_that_is_not_iso(tmp_path, capsys, date):
    # compared as text, they matched nothing ("no stored audit") or everything
    with pytest.raises(SystemExit) as exited:
        cli.main(["history", "--since", date, "--db", str(tmp_path / "db.sqlite")])
    assert exited.value.code == 2
    assert "is not an ISO date or time" in capsys.readouterr().err


def test_history_takes_iso_dates_and_times_as_stored():
    from eb_torchperf.cli.history import utc_time
    assert utc_time("2026-11-01") == "2026-11-01"
    assert utc_time("2026-11-01T08:00") == "2026-11-01T08:00:00"
    assert utc_time("2026-11-01T10:00+02:00") == "2026-11-01T08:00:00"


def test_an_audit_that_measured_nothing_is_not_stored(tmp_path, capsys):
    # a venv without torch: exit 2 with its line, and it was stored as "torch ? ... ok"
    pytest.importorskip("sqlalchemy")
    document = dict(json.loads(GOLDEN.read_text()), target=None, results=[])
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(document))
    database = str(tmp_path / "db.sqlite")
    assert cli.main(["db", "import", str(empty), "--db", database]) == 2
    assert capsys.readouterr().err == "failed: %s holds an audit that measured nothing\n" % empty
    assert cli.main(["db", "where", "--db", database]) == 0
    assert capsys.readouterr().out == "sqlite:///%s: 0 audits\n" % database
