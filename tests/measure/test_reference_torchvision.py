"""The reference venv's torchvision (reference.torchvision_requirement / add_torchvision)."""

import os
import stat

import pytest

from eb_torchperf.measure import reference


@pytest.mark.parametrize("torch_version, expected", [
    ("2.13.0", "torchvision==0.28.0"), ("2.14.0", "torchvision==0.29.0"),
    ("2.11.0", "torchvision==0.26.0"), ("2.9.1", "torchvision==0.24.1"),
    ("1.13.0a0", "torchvision==0.14.0"), ("2.5.1", "torchvision==0.20.1"),
    ("2.11.0+cu130", "torchvision==0.26.0"), ("1.8.0", None), ("not a version", None)])
def test_matching_torchvision(torch_version, expected):
    assert reference.torchvision_requirement(torch_version) == expected


def _fake_venv(tmp_path, exit_status):
    """A venv whose bin/python logs its arguments and exits with `exit_status`."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\necho \"$@\" >> %s\necho 'ERROR: No matching distribution "
                      "found for torchvision==0.28.0' >&2\nexit %d\n"
                      % (tmp_path / "argv.log", exit_status))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return venv


def test_torchvision_installed_beside_the_pinned_torch(tmp_path):
    venv = _fake_venv(tmp_path, 0)
    lines = []
    assert reference.add_torchvision(venv, "torch==2.13.0", ["--index-url=X"],
                                     lines.append) == "torchvision==0.28.0"
    assert (tmp_path / "argv.log").read_text().split() == [
        "-m", "pip", "install", "--disable-pip-version-check", "-q", "torchvision==0.28.0",
        "torch==2.13.0", "--index-url=X"]
    assert (venv / reference.TORCHVISION_MARKER).read_text() == "torchvision==0.28.0\n"
    assert lines == []


def test_failed_torchvision_install_keeps_the_venv_and_says_so(tmp_path):
    venv = _fake_venv(tmp_path, 1)
    lines = []
    assert reference.add_torchvision(venv, "/w/torch-2.13.0+cpu-cp311-linux.whl", (),
                                     lines.append) is None
    assert lines == ["reference venv: pip install torchvision==0.28.0 failed (exit 1): ERROR: "
                     "No matching distribution found for torchvision==0.28.0; kept without "
                     "torchvision (models needing it are skipped)"]
    assert (venv / reference.TORCHVISION_MARKER).read_text().startswith("failed: ")
    assert os.path.exists(venv / "bin" / "python")
