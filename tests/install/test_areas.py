"""The per-area summary and the CI rule (tests/areas.py), on a real pytest run of a
small tree that carries this suite's conftest: a skip in tests/easybuild passes
locally and fails under CI=true; the closing table counts each area."""

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import areas

TESTS = areas.__file__.rsplit("/", 1)[0]


def _report(nodeid, outcome, when="call", longrepr=None):
    return SimpleNamespace(nodeid=nodeid, when=when, passed=outcome == "passed",
                           skipped=outcome == "skipped", failed=outcome == "failed",
                           longrepr=longrepr, duration=0.5)


def test_area_of_names_the_subfolder():
    assert areas.area_of("tests/easybuild/test_eb_install.py::test_x") == "easybuild"
    assert areas.area_of("tests/test_top.py::test_x") == areas.TOP


def test_strict_failure_only_for_strict_areas_under_ci():
    skipped = _report("tests/easybuild/test_x.py::t", "skipped", "setup",
                      ("f.py", 3, "Skipped: Lmod is not installed"))
    assert areas.strict_failure(skipped, {}) is None
    assert areas.strict_failure(skipped, {"CI": "true"}) == (
        "CI=true: tests/easybuild must run, but was skipped: Lmod is not installed")
    other = _report("tests/fleet/test_x.py::t", "skipped", "setup", ("f.py", 3, "no slurm"))
    assert areas.strict_failure(other, {"CI": "true"}) is None


def test_tally_counts_phases_once():
    tally = areas.AreaTally()
    for report in (_report("tests/a/t.py::x", "passed", "setup"),
                   _report("tests/a/t.py::x", "passed"),
                   _report("tests/a/t.py::y", "skipped", "setup"),
                   _report("tests/b/t.py::z", "failed")):
        tally.add(report)
    lines = tally.summary_lines()
    assert lines[1].split() == ["a", "1", "1", "0", "1.5"]
    assert lines[2].split() == ["b", "0", "0", "1", "0.5"]
    assert lines[3].split() == ["total", "1", "1", "1", "2.0"]


def _tree(tmp_path):
    tests = tmp_path / "tests"
    (tests / "easybuild").mkdir(parents=True)
    for name in ("conftest.py", "areas.py", "testdata.py"):
        shutil.copy(os.path.join(TESTS, name), tests / name)
    (tests / "easybuild" / "test_s.py").write_text(
        "import pytest\n\ndef test_ok():\n    pass\n\n"
        "def test_skips():\n    pytest.skip('no eb here')\n")
    return tests


def _pytest(tests, **env):
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tests)], cwd=str(tests.parent), env=environ, text=True,
                          capture_output=True, timeout=120)


def test_skip_passes_locally_and_fails_under_ci(tmp_path):
    tests = _tree(tmp_path)
    local = _pytest(tests)
    assert local.returncode == 0, local.stdout
    assert any(line.split() == ["easybuild", "1", "1", "0"] + line.split()[4:]
               for line in local.stdout.splitlines()), local.stdout
    ci = _pytest(tests, CI="true")
    assert ci.returncode == 1, ci.stdout
    assert "CI=true: tests/easybuild must run, but was skipped: no eb here" in ci.stdout
