"""Issue 27 items 10 and 17: the reference venv's processes and deadlines."""

import os
import pathlib
import stat
import sys
import time

import pytest

from eb_torchperf.errors import ConfigError
from eb_torchperf.measure import reference, setup_run


def _gone(pid: int) -> bool:
    try:
        state = pathlib.Path("/proc/%d/stat" % pid).read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # reaped, or a zombie whose parent died


def test_an_interrupt_while_pip_runs_kills_its_whole_process_group(tmp_path):  # item 10
    pids = tmp_path / "pids"
    script = ("sleep 300 & echo $! > %s; echo Collecting torch; wait" % pids)

    def interrupt(line):
        raise KeyboardInterrupt  # Ctrl-C / SIGTERM while pip downloads

    with pytest.raises(KeyboardInterrupt):
        setup_run.run_setup(["/bin/sh", "-c", script], "pip install torch", log=interrupt)
    child = int(pids.read_text())
    for _ in range(100):  # SIGKILL is delivered when the child is next scheduled
        if _gone(child):
            break
        time.sleep(0.05)
    assert _gone(child), "pip's child %d outlived the audit" % child


def _fake_python(path: pathlib.Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_wheel_asks_the_target_version_in_the_target_env(tmp_path):  # item 17
    python = _fake_python(tmp_path / "python",
                          'test "$TORCH_PICK" = new && printf 2.13.0 && exit 0\nexit 1\n')
    assert reference.target_torch_version(python, 10, {"TORCH_PICK": "new"}) == "2.13.0"
    with pytest.raises(ConfigError, match="torch does not import"):
        reference.target_torch_version(python, 10)


def test_a_hanging_cached_venv_is_waited_for_timeout_s_only(tmp_path, monkeypatch):
    venv = tmp_path / "venv"  # item 17: it was waited for 300 s whatever --timeout said
    (venv / "bin").mkdir(parents=True)
    _fake_python(venv / "bin" / "python", "exec sleep 300\n")
    seen, real_problem = {}, reference.venv_problem

    def problem(venv, expected, env=None, timeout_s=300):
        seen["timeout_s"] = timeout_s
        raise ConfigError("stop here")

    monkeypatch.setattr(reference, "venv_problem", problem)
    monkeypatch.setattr(reference, "venv_dir_for", lambda *args: venv)
    (venv / reference.READY_MARKER).write_text("torch==2.13.0\n")
    with pytest.raises(ConfigError, match="stop here"):
        reference.resolve_reference("wheel==2.13.0", sys.executable, cache_dir=tmp_path,
                                    timeout_s=7)
    assert seen == {"timeout_s": 7}
    assert real_problem(venv, None, dict(os.environ), 1).endswith(
        "timed out after 1 seconds")


def test_a_full_tmpdir_is_one_short_line(tmp_path, monkeypatch):  # item 18
    import shutil
    import tempfile
    from eb_torchperf.measure.runner import ProbeBundle

    def full(src, dst, **kwargs):  # shutil.Error lists every file it could not copy
        raise shutil.Error([(str(src), str(dst), "[Errno 28] No space left on device")] * 60)

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(shutil, "copytree", full)
    with pytest.raises(ConfigError) as caught:
        ProbeBundle().__enter__()
    assert str(caught.value) == ("no space left in $TMPDIR %s (the probe is copied there); "
                                 "free space or set TMPDIR to another folder" % tmp_path)
    assert os.listdir(tmp_path) == []  # the half-made bundle is removed
