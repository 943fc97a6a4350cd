"""The reference runs apart from the target (issue 13): its environment, the same-torch
stop before measuring, and reference venvs that really hold their torch."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import zipfile

import pytest

from eb_torchperf.measure.interleave import AuditRun, RunnerOptions
from eb_torchperf.cli.dispatch import main
from eb_torchperf.errors import ConfigError
from eb_torchperf.measure.isolation import (isolated_environ, isolating_overrides, reference_overrides,
                                    same_torch_problem)
from eb_torchperf.records.measurements import ProbeResult, load_results
from eb_torchperf.measure.reference import READY_MARKER, ensure_wheel_venv, venv_dir_for, venv_problem

from testdata import DEBIAN_PYTHON

FAST = RunnerOptions(pairs=2, block_s=0.01, warmup_s=0.0, settle_s=0.0, min_rounds=1,
                     max_rounds=1, bench_budget_s=10.0)


def _module_tree(tmp_path):
    """An EasyBuild-like PyTorch installation: <root>/lib/python3.11/site-packages/torch."""
    root = tmp_path / "software" / "PyTorch" / "2.13.0"
    site = root / "lib" / "python3.11" / "site-packages"
    (site / "torch").mkdir(parents=True)
    (root / "lib64").mkdir()
    return root, site


def test_isolation_drops_the_modules_python_path_and_library_folders(tmp_path):
    root, site = _module_tree(tmp_path)
    environ = {"PYTHONPATH": "%s:/opt/other" % site, "EBPYTHONPREFIXES": str(root),
               "EBROOTPYTORCH": str(root), "EBVERSIONPYTORCH": "2.13.0",
               "LD_LIBRARY_PATH": "%s/lib64:/opt/blas/lib" % root, "OMP_NUM_THREADS": "2"}
    assert isolating_overrides(environ) == {
        "PYTHONPATH": None, "EBPYTHONPREFIXES": None, "EBROOTPYTORCH": None,
        "EBVERSIONPYTORCH": None, "LD_LIBRARY_PATH": "/opt/blas/lib"}


def test_library_folders_of_a_pythonpath_only_module_are_dropped(tmp_path):
    root, site = _module_tree(tmp_path)
    environ = {"PYTHONPATH": str(site), "LD_LIBRARY_PATH": "%s/lib64" % root}
    assert isolating_overrides(environ) == {"PYTHONPATH": None, "LD_LIBRARY_PATH": None}


def test_reference_env_extra_comes_after_the_isolation_and_keep_skips_it(tmp_path):
    environ = {"PYTHONPATH": "/mod/site", "PYTHONHOME": "/mod"}
    extra = {"PYTHONPATH": "/ref/site"}
    assert reference_overrides(None, extra, environ=environ) == {
        "PYTHONPATH": "/ref/site", "PYTHONHOME": None}
    assert reference_overrides({"OMP_NUM_THREADS": None}, None, keep=True,
                               environ=environ) == {"OMP_NUM_THREADS": None}
    assert isolated_environ({"PYTHONPATH": "/mod/site", "PIP_INDEX_URL": "x"}) == {
        "PIP_INDEX_URL": "x"}


def _probe(label, file, fingerprint, version="2.13.0+cpu"):
    return ProbeResult.from_facts(label, "/%s/python" % label, {"torch": {
        "version": version, "file": file, "file_realpath": file, "fingerprint": fingerprint}})


def test_same_file_or_same_fingerprint_is_one_torch():
    same_file = same_torch_problem(_probe("target", "/m/torch/__init__.py", "a"),
                                   _probe("reference", "/m/torch/__init__.py", "b"))
    assert same_file == "both sides import the same torch (/m/torch/__init__.py)"
    copies = same_torch_problem(_probe("target", "/m/torch/__init__.py", "f00d"),
                                _probe("reference", "/v/torch/__init__.py", "f00d"))
    assert copies == ("both sides run the same torch build (fingerprint f00d: torch 2.13.0+cpu; "
                      "files /m/torch/__init__.py and /v/torch/__init__.py)")
    assert same_torch_problem(_probe("target", "/m/torch/__init__.py", "a"),
                              _probe("reference", "/v/torch/__init__.py", "b")) is None
    assert same_torch_problem(_probe("target", "/m/t.py", "a"), None) is None


class _OneTorchWorker:
    """Both sides report the same torch file; logs the requests."""

    def __init__(self, log, python, bundle_dir, label, env, start_timeout_s):
        self.log, self.label = log, label

    def start(self):
        self.log.append((self.label, "start"))
        return {"torch_version": "2.13.0"}

    def alive(self):
        return True

    def close(self):
        self.log.append((self.label, "close"))

    def request(self, op, timeout_s, **fields):
        self.log.append((self.label, op))
        if op == "facts":
            return {"ok": True, "facts": {"torch": {"version": "2.13.0", "fingerprint": "ab",
                                                    "file": "/m/torch/__init__.py"}}}
        if op == "availability":
            return {"ok": True, "reason": None}
        if op == "prepare":
            return {"ok": True, "number": 1}
        return {"ok": True, "times_s": [0.001]}


def test_audit_of_one_torch_stops_after_the_facts_before_any_benchmark():
    log = []
    audit = AuditRun("/t/python", "/r/python", "quick", FAST, only=["dispatch"],
                     worker_factory=lambda *a: _OneTorchWorker(log, *a))
    with pytest.raises(ConfigError, match=r"^both sides import the same torch "
                                          r"\(/m/torch/__init__.py\): .*--allow-same-torch"):
        audit.run()
    assert log == [("target", "start"), ("target", "facts"), ("reference", "start"),
                   ("reference", "facts"), ("target", "close"), ("reference", "close")]
    allowed = RunnerOptions(**dict(FAST.__dict__, allow_same_torch=True))
    result = AuditRun("/t/python", "/r/python", "quick", allowed, only=["dispatch"],
                      worker_factory=lambda *a: _OneTorchWorker([], *a)).run()
    assert result.complete and len(result.results) == 4


def _base_python():
    """The interpreter this test venv was made from (no torch of its own)."""
    base = getattr(sys, "_base_executable", None)
    return base if base and sys.prefix != sys.base_prefix else None


def _site_packages():
    import torch
    return str(pathlib.Path(torch.__file__).parents[1])


@pytest.fixture
def module_shell(monkeypatch, wheel_python, debian_python):
    """The issue's set-up: a "module" puts the wheel's torch on PYTHONPATH; the target is
    a plain interpreter that gets its torch only from there."""
    base = _base_python()
    if base is None:
        pytest.skip("needs a venv's base interpreter (a plain Python without torch)")
    monkeypatch.setenv("PYTHONPATH", _site_packages())
    return base


def test_module_on_pythonpath_does_not_reach_the_reference(module_shell, tmp_path, capsys):
    out = tmp_path / "r.json"
    status = main(["audit", "--python", module_shell, "--reference", DEBIAN_PYTHON,
                   "--only", "dispatch", "--pairs", "1", "--quiet", "--format", "json",
                   "--out", str(out)])
    assert status in (0, 1), capsys.readouterr().err
    result = load_results(out)
    assert result.target.fact("torch", "file").startswith(_site_packages() + os.sep)
    assert result.reference.fact("torch", "file").startswith("/usr/lib/python3/dist-packages/")
    assert "PYTHONPATH" not in result.reference.facts["env"]
    assert result.target.facts["env"]["PYTHONPATH"] == _site_packages()


def test_kept_module_env_makes_one_torch_and_stops_with_exit_2(module_shell, tmp_path, capsys):
    out = tmp_path / "r.json"
    status = main(["audit", "--python", module_shell, "--reference", DEBIAN_PYTHON,
                   "--keep-reference-env", "--only", "dispatch", "--pairs", "1", "--quiet",
                   "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith(
        "eb-torchperf: error: both sides import the same torch (%s" % _site_packages())
    assert not out.exists()


def _fake_torch_wheel(folder, version="0.0.1"):
    """A tiny pure-Python wheel named torch (so pip and the venv check run in seconds)."""
    path = folder / ("torch-%s-py3-none-any.whl" % version)
    info = "torch-%s.dist-info" % version
    with zipfile.ZipFile(path, "w") as whl:
        whl.writestr("torch/__init__.py", "__version__ = %r\n" % version)
        whl.writestr(info + "/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: %s\n"
                     % version)
        whl.writestr(info + "/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: "
                                      "true\nTag: py3-none-any\n")
        whl.writestr(info + "/RECORD", "")
    return path


@pytest.fixture
def fake_wheel(tmp_path, monkeypatch):
    """A torch wheel and, on PYTHONPATH, a loaded module's torch of the same version."""
    module_site = tmp_path / "module-site"
    (module_site / "torch").mkdir(parents=True)
    (module_site / "torch" / "__init__.py").write_text("__version__ = '0.0.1'\n")
    (module_site / "torch-0.0.1.dist-info").mkdir()
    (module_site / "torch-0.0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 0.0.1\n")
    monkeypatch.setenv("PYTHONPATH", str(module_site))
    return str(_fake_torch_wheel(tmp_path))


def _venv_torch(python):
    code = "import torch; print(torch.__file__)"
    return subprocess.run([python, "-c", code], capture_output=True, text=True,
                          env=isolated_environ()).stdout.strip()


def test_venv_is_built_without_the_modules_torch_and_rebuilt_when_broken(tmp_path, fake_wheel):
    lines = []
    python = ensure_wheel_venv(fake_wheel, ["--no-index"], tmp_path / "cache", log=lines.append)
    venv = pathlib.Path(python).parents[1]
    assert _venv_torch(python).startswith(str(venv) + os.sep)
    assert any(l.startswith("pip: Successfully installed torch-0.0.1") for l in lines), lines
    assert (venv / READY_MARKER).exists() and pathlib.Path(str(venv) + ".lock").exists()
    # a cached venv whose torch went missing is noticed and rebuilt
    for path in venv.glob("lib/python*/site-packages/torch"):
        shutil.rmtree(path)
    assert venv_problem(venv, "0.0.1") == ("import torch fails: ModuleNotFoundError: No module "
                                           "named 'torch'")
    # ... also when the module's torch would be found through PYTHONPATH
    module_torch = os.path.join(os.environ["PYTHONPATH"], "torch", "__init__.py")
    assert venv_problem(venv, "0.0.1", env=dict(os.environ)) == (
        "import torch gives 0.0.1 from %s, outside the venv" % module_torch)
    lines.clear()
    assert ensure_wheel_venv(fake_wheel, ["--no-index"], tmp_path / "cache",
                             log=lines.append) == python
    assert lines[0].startswith("cached reference venv %s is broken (" % venv)
    assert _venv_torch(python).startswith(str(venv) + os.sep)


def test_venv_with_another_torch_version_is_a_problem(tmp_path, fake_wheel):
    python = ensure_wheel_venv(fake_wheel, ["--no-index"], tmp_path / "cache")
    venv = pathlib.Path(python).parents[1]
    assert venv_problem(venv, "0.0.1") is None
    assert venv_problem(venv, "2.13.0") == "import torch gives 0.0.1, not 2.13.0"
    assert venv_problem(tmp_path / "nothing", "2.13.0") == "%s is missing" % (
        tmp_path / "nothing" / "bin" / "python")


def test_a_second_build_of_one_venv_waits_for_the_first(tmp_path, fake_wheel):
    import fcntl
    cache = tmp_path / "cache"
    venv = venv_dir_for(fake_wheel, ["--no-index"], cache)
    venv.parent.mkdir(parents=True)
    lines, done = [], []
    with open(str(venv) + ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        worker = threading.Thread(target=lambda: done.append(ensure_wheel_venv(
            fake_wheel, ["--no-index"], cache, log=lines.append)))
        worker.start()
        for _ in range(600):  # until the thread has reached the lock
            if lines or not worker.is_alive():
                break
            worker.join(0.1)
        assert lines == ["waiting for another eb-torchperf that builds %s" % venv]
        assert not done  # blocked on the lock
    worker.join(300)
    assert done == [str(venv / "bin" / "python")]
