"""Install route (a): the sdist and wheel that `python -m build` makes from this tree,
installed into fresh venvs of two different Pythons (Debian's /usr/bin/python3 and
another one), carry the console script, the hooks file, the templates and the data
files, and run an audit of Debian's torch with nothing else installed by hand.
The wheel's dependencies come from pip's own index settings (PyPI or a site mirror)."""

import glob
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

from testdata import DEBIAN_PYTHON

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE_FILES = ("eb_torchperf/easybuild/hooks_file/torchperf.py",
                 "eb_torchperf/diagnosis/data/wheel_configs.json",
                 "eb_torchperf/present/report/templates/report.html.j2",
                 "eb_torchperf/present/report/templates/report.md.j2")
#: The audit each installed copy runs (the README's first command, one cheap benchmark).
AUDIT = ["audit", "--python", DEBIAN_PYTHON, "--reference", "none", "--only", "dispatch",
         "--suite", "quick", "--pairs", "1", "--device", "cpu", "--quiet", "--format", "md"]


def other_python():
    """A second Python >= 3.8 that is not Debian's: $EB_TORCHPERF_OTHER_PYTHON, the base of
    this venv, or the newest pyenv one; None when the machine has only one."""
    debian = os.path.realpath(DEBIAN_PYTHON)
    candidates = [os.environ.get("EB_TORCHPERF_OTHER_PYTHON"),
                  getattr(sys, "_base_executable", None)]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")),
                         key=lambda p: [int(x) for x in p.split("/")[-3].split(".")[:2]],
                         reverse=True)
    for python in candidates:
        if python and os.path.exists(python) and os.path.realpath(python) != debian:
            check = [python, "-c", "import sys; print(sys.version_info >= (3, 8))"]
            if subprocess.run(check, capture_output=True, text=True,
                              timeout=60).stdout.strip() == "True":
                return python
    return None


def clean_env():
    """This environment without PYTHONPATH: the installed copy, not this tree, must run."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    if importlib.util.find_spec("build") is None:
        pytest.skip("the `build` package is not installed (pip install '.[test]')")
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), REPO],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def test_sdist_and_wheel_carry_hooks_templates_and_data(dist):
    (wheel,) = glob.glob(str(dist / "*.whl"))
    (sdist,) = glob.glob(str(dist / "*.tar.gz"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(PACKAGE_FILES) <= names
    entry_points = zipfile.ZipFile(wheel).read("eb_torchperf-0.1.0.dist-info/entry_points.txt")
    assert b"eb-torchperf = eb_torchperf.cli:console_main" in entry_points
    assert b"torchperf_post_sanitycheck" in entry_points
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert set(PACKAGE_FILES) <= members


@pytest.mark.parametrize("which", ["debian", "other"])
def test_wheel_installs_into_a_fresh_venv_and_audits(dist, which, tmp_path):
    python = DEBIAN_PYTHON if which == "debian" else other_python()
    if not python or not os.path.exists(python):
        pytest.skip("no second Python >= 3.8 here (set EB_TORCHPERF_OTHER_PYTHON)")
    venv = tmp_path / "venv"
    env = clean_env()
    subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300, env=env)
    (wheel,) = glob.glob(str(dist / "*.whl"))
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", wheel],
                             capture_output=True, text=True, timeout=600, env=env)
    assert install.returncode == 0, install.stderr[-2000:]
    script = str(venv / "bin" / "eb-torchperf")
    with open(script) as handle:
        assert handle.readline().startswith("#!%s" % (venv / "bin" / "python"))
    hooks = subprocess.run([script, "hooks-path"], capture_output=True, text=True, timeout=120,
                           env=env)
    assert hooks.stdout.strip().startswith(str(venv) + os.sep), hooks
    with open(hooks.stdout.strip()) as handle:
        assert "from eb_torchperf.easybuild.hooks import parse_hook" in handle.read()
    out = tmp_path / "audit.json"
    audit = subprocess.run([script] + AUDIT + ["--out", str(out)], cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=600, env=env)
    assert audit.returncode in (0, 1), audit.stderr[-2000:]
    results = json.loads(out.read_text())
    assert results["complete"] and [r["bench"] for r in results["results"]] == ["dispatch"]
    assert (tmp_path / "audit.md").read_text().startswith("#")
