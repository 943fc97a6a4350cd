"""Shared fixtures: paths of real inputs and of the interpreters the tests can use."""

import os
import subprocess
import sys

import pytest

from testdata import DEBIAN_PYTHON


def _has_torch(python):
    if not python or not os.path.exists(python):
        return False
    proc = subprocess.run([python, "-s", "-c", "import torch"], capture_output=True)
    return proc.returncode == 0


@pytest.fixture(scope="session")
def wheel_python():
    """The test interpreter itself, when it has torch (the .venv holds torch 2.13.0)."""
    if not _has_torch(sys.executable):
        pytest.skip("torch is not installed for %s (run scripts/setup.sh)" % sys.executable)
    return sys.executable


@pytest.fixture(scope="session")
def debian_python():
    """Debian's /usr/bin/python3 with python3-torch (a source build of torch 1.13)."""
    if not _has_torch(DEBIAN_PYTHON):
        pytest.skip("Debian's python3-torch is not installed (apt-get install python3-torch)")
    return DEBIAN_PYTHON


@pytest.fixture
def python_without_torch(tmp_path):
    """A fresh venv that cannot import torch."""
    venv = tmp_path / "notorch"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return str(venv / "bin" / "python")


@pytest.fixture(autouse=True)
def _no_results_database(monkeypatch):
    """Audits in tests store nothing in the user's results database (EB_TORCHPERF_DB);
    tests/store opens its own databases."""
    monkeypatch.setenv("EB_TORCHPERF_DB", "off")
