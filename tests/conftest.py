"""Shared fixtures: paths of real inputs and of the interpreters the tests can use."""

import os
import subprocess
import sys

import pytest

import areas
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


# -- per-area summary, and no silent skip of the EasyBuild integration under CI (tests/areas.py)
TALLY = areas.AreaTally()
STRICT_COLLECT_SKIPS = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    failure = areas.strict_failure(report)
    if failure:
        report.outcome, report.longrepr = "failed", failure


def pytest_collectreport(report):
    if areas.strict_failure(report):
        STRICT_COLLECT_SKIPS.append(areas.strict_failure(report))


def pytest_runtest_logreport(report):
    TALLY.add(report)


def pytest_sessionfinish(session, exitstatus):
    if STRICT_COLLECT_SKIPS and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    for line in STRICT_COLLECT_SKIPS:
        terminalreporter.write_line("FAILED (collection) " + line, red=True)
    terminalreporter.write_sep("-", "per area (tests/<area>)")
    for line in TALLY.summary_lines():
        terminalreporter.write_line(line)
