"""Issue 27, second hostile sweep: output files, statuses and signals (one case each).

Every case ran against the code before its fix and failed there.
"""

import fcntl
import json
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from eb_torchperf import cli
from faults import faulty_python

DATA = pathlib.Path(__file__).parent.parent / "data"
GOLDEN = DATA / "results-debian-vs-wheel-v1.json"


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _audit(*extra) -> int:
    return cli.main(["audit", "--python", sys.executable, "--reference", "none", "--quiet",
                     "--suite", "quick", "--pairs", "1", "--only", "dispatch",
                     "--device", "cpu", *extra])


def test_out_onto_a_link_to_a_device_node_is_refused(tmp_path, capsys):  # item 1
    link = tmp_path / "devnull"
    link.symlink_to("/dev/null")
    assert _audit("--out", str(link)) == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: cannot write %s: it is not a regular file (a device, FIFO or "
        "socket); give the name of a file\n" % link)
    assert link.is_symlink() and os.readlink(str(link)) == "/dev/null"
    assert sorted(os.listdir(tmp_path)) == ["devnull"]


def test_out_onto_a_fifo_is_refused_without_blocking(tmp_path, capsys):  # item 17
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    assert _audit("--out", str(fifo)) == 2  # opening a FIFO for writing blocked forever
    assert "it is not a regular file" in _one_error_line(capsys)


def test_safe_write_refuses_a_device_node_itself(tmp_path):  # item 1, the one writer
    from eb_torchperf.errors import WriteError
    from eb_torchperf.records import safe_write
    node = tmp_path / "node"  # never /dev/null itself: the old code replaced it
    if os.geteuid() == 0:
        os.mknod(str(node), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        os.mkfifo(str(node))
    with pytest.raises(WriteError, match="is not a regular file"):
        safe_write.write_text(node, "{}")
    assert not stat.S_ISREG(node.stat().st_mode)
    assert os.listdir(tmp_path) == ["node"]


def test_a_dangling_link_as_out_creates_nothing(tmp_path, capsys):  # item 5
    elsewhere = tmp_path / "elsewhere" / "target.json"
    elsewhere.parent.mkdir()
    link = tmp_path / "out" / "run.json"
    link.parent.mkdir()
    link.symlink_to(elsewhere)
    assert _audit("--out", str(link)) == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: cannot write %s: it is a symbolic link (to %s); give the "
        "file's own name\n" % (link, elsewhere))
    assert not elsewhere.exists() and link.is_symlink()


def test_a_failed_run_never_replaces_complete_results(tmp_path, capsys):  # item 4
    good = tmp_path / "good.json"
    shutil.copy(GOLDEN, good)
    before = good.read_bytes()
    code = cli.main(["audit", "--python", "/bin/true", "--reference", "none", "--quiet",
                     "--out", str(good)])
    assert code == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: cannot write %s: it exists (results are never replaced); "
        "remove it or choose another name\n" % good)
    assert good.read_bytes() == before


def test_a_second_audit_on_the_same_out_is_refused_while_the_first_runs(tmp_path,
                                                                         capsys):  # item 3
    out = tmp_path / "run.json"
    fd = os.open(str(out), os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # the first audit's claim
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        assert _audit("--out", str(out)) == 2
        assert _one_error_line(capsys) == (
            "eb-torchperf: error: cannot write %s: another audit is writing it; choose "
            "another name\n" % out)
        assert out.exists() and out.stat().st_size == 0  # the first one's claim is kept
    finally:
        os.close(fd)


def test_a_claimed_out_that_saved_nothing_is_removed(tmp_path, capsys):  # item 3
    out = tmp_path / "run.json"
    assert cli.main(["audit", "--python", "/bin/true", "--reference", "wheel", "--quiet",
                     "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]) == 2
    capsys.readouterr()
    assert not out.exists()  # the claim was released and its empty file removed


def test_an_early_usage_error_leaves_no_reports_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["audit", "--python", str(tmp_path / "missing"), "--reference",
                     "none"]) == 2
    _one_error_line(capsys)
    assert os.listdir(tmp_path) == []



def _wait_for(path: pathlib.Path, proc, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the fault never began"
        time.sleep(0.05)


def _audit_process(python: str, out: pathlib.Path, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "eb_torchperf.cli", "audit", "--python", python,
         "--reference", "none", "--pairs", "1", "--only", "dispatch", "--device", "cpu",
         "--quiet", "--format", "md", "--out", str(out), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sighup_keeps_the_results_like_sigterm(tmp_path, wheel_python):  # item 2
    mark = tmp_path / "quitting"
    python = faulty_python(tmp_path, wheel_python, "slow-quit", mark=str(mark))
    out = tmp_path / "run.json"
    proc = _audit_process(python, out)
    _wait_for(mark, proc)  # pair 0 measured; its worker takes 4 s to quit
    proc.send_signal(signal.SIGHUP)  # the ssh session dropped
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert json.loads(out.read_text())["complete"] is False
    assert (tmp_path / "run.md").exists()


def interrupt_hung_audit(tmp_path, wheel_python, signum, before=lambda mark: None):
    """Start an audit whose target worker hangs at its 3rd request, call `before(mark)`,
    send `signum`: the audit must exit 130 at once with one line, results kept; the
    hang's marker file is returned (its path is in the hung worker's command line)."""
    mark = tmp_path / "hanging"
    python = faulty_python(tmp_path, wheel_python, "hang", at=3, mark=str(mark))
    out = tmp_path / "run.json"
    proc = _audit_process(python, out, "--timeout", "600")
    _wait_for(mark, proc)
    before(mark)
    proc.send_signal(signum)
    try:  # the old code waited the whole --timeout (600 s) for the hung worker
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        "eb-torchperf: error: audit interrupted (results so far written to %s)" % out]
    assert json.loads(out.read_text())["complete"] is False
    return mark


def test_ctrl_c_while_a_worker_hangs_kills_it_and_exits_130(tmp_path, wheel_python):  # 12
    interrupt_hung_audit(tmp_path, wheel_python, signal.SIGINT)


@pytest.mark.parametrize("step", ["analyse", "write_reports"])
def test_an_interrupt_after_the_last_measurement_still_reports(tmp_path, monkeypatch, capsys,
                                                                wheel_python, step):
    from eb_torchperf.workflows import pipeline
    real = getattr(pipeline, step)

    def ctrl_c_then(*args, **kwargs):  # the last ~0.3 s: diagnosis, saving, reports
        os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, step, ctrl_c_then)
    out = tmp_path / "run.json"
    assert _audit("--format", "md", "--out", str(out)) == 130
    assert capsys.readouterr().err == (
        "eb-torchperf: interrupted after the measurement (results written to %s)\n" % out)
    assert json.loads(out.read_text())["complete"] is True
    assert (tmp_path / "run.md").read_text().startswith("#")


def _report(tmp_path, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "eb_torchperf.cli", "report", str(GOLDEN), "--format", "md",
         "--out-dir", str(tmp_path), "--fail-on", "never"], stderr=subprocess.PIPE, **popen)


def test_a_reader_that_stops_early_is_exit_141_and_quiet(tmp_path):  # item 16
    proc = _report(tmp_path, stdout=subprocess.PIPE)
    proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, err  # was 1: the status of a finding
    assert err == b""
    assert (tmp_path / "results-debian-vs-wheel-v1.md").exists()  # written first


@pytest.mark.parametrize("closed", [1, 2])
def test_a_closed_stdout_or_stderr_is_not_an_internal_error(tmp_path, closed):  # item 16
    proc = _report(tmp_path, stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(closed))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err  # was 3: sys.stdout/stderr is None
    assert b"internal error" not in err
    assert (tmp_path / "results-debian-vs-wheel-v1.md").read_text().startswith("#")


def test_nothing_measured_because_a_benchmark_failed_names_it_and_fails(
        tmp_path, wheel_python):  # item 15
    python = faulty_python(tmp_path, wheel_python, "fail-prepare")
    out = tmp_path / "run.json"
    proc = _audit_process(python, out)
    stdout, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err  # was 0: "nothing measured" read as OK
    assert err.strip().splitlines() == [
        "eb-torchperf: error: nothing measured: dispatch failed on the target: KeyError: "
        "'no-such-dispatch' (results written to %s)" % out]
    assert "FAILED: nothing measured (dispatch failed on the target" in stdout
    assert json.loads(out.read_text())["complete"] is True


def test_a_non_utf8_byte_in_a_recorded_variable_is_reported(tmp_path, capsys):  # item 13
    document = json.loads((DATA / "results-debian-vs-venv-v2.json").read_text())
    document["target"]["facts"]["env"]["LD_LIBRARY_PATH"] = "/opt/caf\udce9/lib"  # as read
    stored = tmp_path / "run.json"
    stored.write_text(json.dumps(document))  # from os.environ: a lone surrogate
    assert cli.main(["report", str(stored), "--format", "md", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert "/opt/caf\\xe9/lib" in (tmp_path / "run.md").read_text(encoding="utf-8")


def test_an_interrupt_another_thread_receives_is_held_too():  # found by the sweep above
    import threading
    from eb_torchperf.measure import interrupts
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # a progress bar's or a library's thread
    other.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            with interrupts.held() as block:
                signal.pthread_kill(other.ident, signal.SIGINT)  # it, not us, receives it
                time.sleep(0.2)  # the handler runs here: it must only record the signal
                finished = True
        assert finished and block.interrupted
    finally:
        stop.set()
        other.join()
