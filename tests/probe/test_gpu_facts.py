"""GPU facts: arch support and cuDNN rules at their boundaries, and collect_gpu on a
CPU-only torch (no CUDA initialisation)."""

import json
import os
import subprocess
import sys

import pytest

from eb_torchperf.probe.gpu_facts import (GPU_ENV_VARS, SDPA_BACKENDS, _version_text,
                                          arch_support, cudnn_compatible)

#: torch.cuda.get_arch_list() of the torch 2.11 cu130 wheel on the H200 (probe facts
#: in tests/data/h200-quick-normal.json).
WHEEL_2_11_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


@pytest.mark.parametrize("arch_list, capability, expected", [
    (WHEEL_2_11_ARCHS, "9.0", "native"),
    (WHEEL_2_11_ARCHS, "8.9", "compatible"),      # sm_86 runs on 8.9 (same major)
    (["sm_80", "compute_80"], "9.0", "ptx"),      # only PTX reaches Hopper
    (["sm_80"], "9.0", "missing"),
    (["sm_90a"], "9.0", "native"),                # arch-specific code on its own device
    (["sm_90a"], "9.1", "missing"),               # ... and nowhere else
    (["compute_100"], "9.0", "missing"),          # PTX newer than the device
    ([], "9.0", "missing"),
])
def test_arch_support(arch_list, capability, expected):
    assert arch_support(arch_list, capability) == expected


@pytest.mark.parametrize("runtime, build, expected", [
    ((9, 19, 0), (9, 19, 0), True),
    ((9, 20, 0), (9, 19, 0), True),    # newer minor: backwards compatible from cuDNN 7
    ((9, 18, 9), (9, 19, 0), False),   # older minor
    ((8, 9, 7), (9, 1, 0), False),     # other major
    ((6, 0, 0), (6, 1, 0), False),     # before 7 minors must match
    ((6, 1, 2), (6, 1, 0), True),
])
def test_cudnn_compatible(runtime, build, expected):
    assert cudnn_compatible(runtime, build) is expected


def test_version_text_decodes_cuda_ints():
    assert _version_text(13000) == "13.0"
    assert _version_text(12080) == "12.8"
    assert _version_text(None) is None


def test_sdpa_backend_indices_match_the_enum():
    attention = pytest.importorskip("torch.nn.attention")
    members = {name: int(value) for name, value in attention.SDPBackend.__members__.items()}
    assert SDPA_BACKENDS[members["FLASH_ATTENTION"]] == "flash"
    assert SDPA_BACKENDS[members["EFFICIENT_ATTENTION"]] == "efficient"
    assert SDPA_BACKENDS[members["MATH"]] == "math"
    assert SDPA_BACKENDS[members["CUDNN_ATTENTION"]] == "cudnn"


@pytest.mark.parametrize("python", [sys.executable, "/usr/bin/python3"])
def test_collect_gpu_without_gpu_does_not_initialise_cuda(python):
    """Runs under the wheel's torch and Debian's torch 1.13 when they are installed."""
    code = ("import json, torch\n"
            "from eb_torchperf.probe.gpu_facts import collect_gpu\n"
            "facts = collect_gpu(torch)\n"
            "facts['initialised'] = torch.cuda.is_initialized()\n"
            "print(json.dumps(facts))\n")
    if not os.path.exists(python):
        pytest.skip("%s not installed" % python)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    if "No module named 'torch'" in proc.stderr:
        pytest.skip("no torch in %s" % python)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    if facts["available"]:
        pytest.skip("this machine has a GPU")
    assert facts["devices"] == []
    assert facts["reason"] in ("this torch is built without CUDA",
                               "no CUDA device is visible (driver, CUDA_VISIBLE_DEVICES)")
    assert sorted(facts["env"]) == sorted(GPU_ENV_VARS)
    assert facts["initialised"] is False
