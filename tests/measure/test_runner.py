"""Real worker processes: probe facts under two interpreters, protocol, failures."""

import os

import pytest

from eb_torchperf.errors import ProbeError
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.measure.runner import ProbeBundle, Worker, run_probe, worker_env

from faults import faulty_python


def test_worker_env_allow_list_and_bundle_first():
    base = {"PATH": "/bin", "OMP_NUM_THREADS": "4", "SECRET_TOKEN": "x",
            "PYTHONPATH": "/eb/lib", "FLEXIBLAS": "OPENBLAS", "LD_PRELOAD": "libiomp5.so"}
    env = worker_env(base, "/tmp/bundle", {"OMP_NUM_THREADS": None, "ATEN_CPU_CAPABILITY": "avx2"})
    assert "SECRET_TOKEN" not in env and "OMP_NUM_THREADS" not in env
    assert env["PYTHONPATH"] == "/tmp/bundle" + os.pathsep + "/eb/lib"
    assert env["FLEXIBLAS"] == "OPENBLAS" and env["LD_PRELOAD"] == "libiomp5.so"
    assert env["ATEN_CPU_CAPABILITY"] == "avx2"


def test_probe_facts_wheel(wheel_python):
    facts = run_probe(wheel_python)
    probe = ProbeResult.from_facts("target", wheel_python, facts)
    assert facts["errors"] == []
    assert facts["torch"]["version"].startswith("2.13.0")
    assert probe.build.blas_info == "mkl" and probe.build.use_mkl is True
    assert facts["torch"]["cpu_capability"] in ("AVX512", "AVX2", "DEFAULT", "AVX512_BF16")
    assert facts["cpu"]["allowed_cores"] == len(os.sched_getaffinity(0))
    # the probe's own folder is not reported as the user's PYTHONPATH
    assert "eb_torchperf-probe" not in facts["env"].get("PYTHONPATH", "")
    assert "KMP_DUPLICATE_LIB_OK" not in facts["env"]
    libs = [os.path.basename(p) for p in facts["mapped_libraries"]["libraries"]]
    assert any(name.startswith("libgomp") for name in libs)


def test_probe_facts_debian_second_interpreter(debian_python):
    facts = run_probe(debian_python)
    probe = ProbeResult.from_facts("target", debian_python, facts)
    assert facts["errors"] == []
    assert facts["python"]["executable"] == debian_python
    assert facts["torch"]["version"].startswith("1.13")
    assert facts["torch"]["cpu_capability"] is None  # no get_cpu_capability() in 1.13
    assert probe.build.blas_info == "generic" and probe.build.cpu_capability == "AVX2"
    assert facts["torch"]["mkl_available"] is False
    libs = [os.path.basename(p) for p in facts["mapped_libraries"]["libraries"]]
    assert any(name.startswith("libblas.so") for name in libs)
    assert facts["threadpools"]["available"] is True  # copied threadpoolctl imports there


def test_worker_protocol(wheel_python):
    with ProbeBundle() as bundle, Worker(wheel_python, bundle.path) as worker:
        assert worker.hello["torch_version"].startswith("2.13.0")
        prep = worker.request("prepare", 60, bench="dispatch", params={"numel": 1})
        assert prep["ok"] and prep["number"] >= 1 and prep["per_call_s"] > 0
        run = worker.request("run", 60, bench="dispatch", params={"numel": 1},
                             number=prep["number"], block_s=0.01, warmup_s=0.0)
        assert run["ok"] and all(t > 0 for t in run["times_s"])
        bad = worker.request("run", 60, bench="matmul_fp32", params={"n": 8}, number=1)
        assert not bad["ok"] and "before prepare" in bad["message"]
        unknown = worker.request("prepare", 60, bench="no_such_bench", params={})
        assert not unknown["ok"] and unknown["exc_type"] == "KeyError"


def test_import_failure_is_one_line(python_without_torch):
    with ProbeBundle() as bundle:
        worker = Worker(python_without_torch, bundle.path)
        with pytest.raises(ProbeError, match=r"import torch failed: ModuleNotFoundError: "
                                             r"No module named 'torch'") as info:
            worker.start()
        worker.close()
    assert python_without_torch in str(info.value) and "\n" not in str(info.value)


def test_missing_interpreter():
    with ProbeBundle() as bundle:
        with pytest.raises(ProbeError, match="cannot start"):
            Worker("/nonexistent/python", bundle.path).start()


def test_crash_reports_signal(tmp_path, wheel_python):
    python = faulty_python(tmp_path, wheel_python, "crash", at=1)
    with ProbeBundle() as bundle, Worker(python, bundle.path) as worker:
        with pytest.raises(ProbeError, match="killed by signal SIGSEGV while facts") as info:
            worker.request("facts", 60)
    assert info.value.exit_code == -11


def test_hang_is_killed_after_timeout(tmp_path, wheel_python):
    python = faulty_python(tmp_path, wheel_python, "hang", at=1)
    with ProbeBundle() as bundle, Worker(python, bundle.path) as worker:
        with pytest.raises(ProbeError, match=r"no answer after 2 s while facts; the worker "
                                             r"was killed"):
            worker.request("facts", 2)
        assert not worker.alive()


@pytest.mark.parametrize("tail, line", [
    ("Fatal Python error: init_fs_encoding: failed to get the Python codec\n"
     "Python runtime state: core initialized\n"
     "ModuleNotFoundError: No module named 'encodings'\n\n"
     "Current thread 0x00007f (most recent call first):\n  <no Python frame>\n",
     "ModuleNotFoundError: No module named 'encodings'"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
     "    raise RuntimeError('boom')\nRuntimeError: boom\n", "RuntimeError: boom"),
    ("Fatal Python error: Segmentation fault\n\nCurrent thread:\n  File \"x.py\", line 3\n",
     "Fatal Python error: Segmentation fault"),
    ("just some output\nlast words\n", "last words"),
    ("", "no output on stderr"),
])
def test_telling_line_of_a_crashed_worker(tail, line):
    from eb_torchperf.measure.runner import telling_line
    assert telling_line(tail) == line
