"""Issue 14, data loss: results are never lost or silently replaced.

Interrupts during the workers' shutdown (real processes), full disks, two runs in one
second, reports named over their input, exit statuses.
"""

import errno
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from eb_torchperf import cli
from eb_torchperf.cli.audit import default_out_path
from eb_torchperf.records import safe_write
from eb_torchperf.errors import WriteError
from faults import faulty_python

DATA = pathlib.Path(__file__).parent.parent / "data"
GOLDEN = DATA / "results-debian-vs-wheel-v1.json"


def _wait_for(path: pathlib.Path, proc, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the workers never began to shut down"
        time.sleep(0.05)


@pytest.mark.parametrize("signals", [(signal.SIGTERM,), (signal.SIGTERM, signal.SIGTERM),
                                     (signal.SIGINT, signal.SIGINT)])
def test_interrupt_while_the_workers_shut_down_keeps_the_results(tmp_path, wheel_python,
                                                                  signals):
    mark = tmp_path / "quitting"
    python = faulty_python(tmp_path, wheel_python, "slow-quit", mark=str(mark))
    out = tmp_path / "run.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "eb_torchperf.cli", "audit", "--python", python,
         "--reference", "none", "--pairs", "1", "--only", "dispatch", "--device", "cpu",
         "--quiet", "--format", "md", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(mark, proc)  # pair 0 measured; its worker takes 4 s to quit
    for signum in signals:
        proc.send_signal(signum)
        time.sleep(0.2)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        "eb-torchperf: error: audit interrupted (results so far written to %s)" % out]
    document = json.loads(out.read_text())
    assert document["complete"] is False
    assert {r["bench"] for r in document["results"]} == {"dispatch"}
    assert (tmp_path / "run.md").exists()


def test_a_full_disk_names_the_file_and_keeps_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    path.write_text('{"old": true}\n')

    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(safe_write.os, "fsync", no_space)
    with pytest.raises(WriteError) as caught:
        safe_write.write_json(path, {"new": list(range(1000))})
    assert str(caught.value) == ("cannot write %s: No space left on device (the previous "
                                 "file is unchanged)" % path)
    assert path.read_text() == '{"old": true}\n'
    assert os.listdir(tmp_path) == ["run.json"]  # no temporary file left


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"),
                    reason="mounting a tmpfs needs root")
def test_a_full_tmpfs_leaves_the_previous_results_intact(tmp_path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        results = disk / "run.json"
        shutil.copy(GOLDEN, results)  # 21 kB: the rewritten copy does not fit beside it
        before = results.read_bytes()
        code = cli.main(["report", str(results), "--format", "json", "--out-dir", str(disk)])
        err = capsys.readouterr().err
        assert code == 2
        assert err == ("eb-torchperf: error: cannot write %s: No space left on device\n"
                       % (disk / "run.report.json"))
        assert results.read_bytes() == before
        assert sorted(os.listdir(disk)) == ["run.json"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_two_runs_in_one_second_get_two_names(tmp_path, monkeypatch):
    names = [safe_write.claim_new(tmp_path, "torchperf-20261201-120000", ".json", (".md",)).name
             for _ in range(2)]
    assert names == ["torchperf-20261201-120000.json", "torchperf-20261201-120000-2.json"]
    (tmp_path / "torchperf-20261201-120000-3.md").write_text("")  # a report of another run
    third = safe_write.claim_new(tmp_path, "torchperf-20261201-120000", ".json", (".md",))
    assert third.name == "torchperf-20261201-120000-4.json"
    monkeypatch.chdir(tmp_path)  # the audit's default path claims its name the same way
    first, second = default_out_path(), default_out_path()
    assert first != second and os.path.exists(first) and os.path.exists(second)


@pytest.mark.parametrize("name", ["run.md", "run.html", "run.explain.json"])
def test_out_named_like_a_report_is_refused_before_anything_runs(tmp_path, capsys, name):
    out = tmp_path / name
    code = cli.main(["audit", "--python", str(tmp_path / "no-python"), "--reference", "none",
                     "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("eb-torchperf: error: --out %s: the results JSON needs a name of "
                          "its own" % out)
    assert not out.exists()


def test_report_json_never_rewrites_its_own_input(tmp_path, capsys):
    results = tmp_path / "run.json"
    shutil.copy(GOLDEN, results)
    before = results.read_bytes()
    assert cli.main(["report", str(results), "--format", "json,md"]) in (0, 1)
    assert results.read_bytes() == before
    written = json.loads((tmp_path / "run.report.json").read_text())
    assert written["schema_version"] == 3 and "analysis" in written and (tmp_path / "run.md").exists()
    assert "json report: %s" % (tmp_path / "run.report.json") in capsys.readouterr().out


def test_a_bug_exits_3_with_one_line_and_the_traceback_in_a_file(tmp_path, capsys,
                                                                    monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)

    def broken(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("eb_torchperf.cli.report.run", broken)
    code = cli.main(["report", str(GOLDEN)])
    err = capsys.readouterr().err
    assert code == 3 and err.count("\n") == 1 and "Traceback" not in err
    saved = pathlib.Path(err.rstrip().rpartition("traceback saved to ")[2])
    assert err.startswith("eb-torchperf: error: internal error (a bug in eb-torchperf): "
                          "ZeroDivisionError: a bug; traceback saved to ")
    assert saved.parent == tmp_path and "ZeroDivisionError: a bug" in saved.read_text()


def test_help_documents_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    for line in ("0    ok", "1    a finding at or above --fail-on", "2    usage or input error",
                 "3    internal error", "130  interrupted"):
        assert line in text
