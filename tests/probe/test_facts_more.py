"""Probe facts for differential diagnosis: env prefixes, system, math, libraries."""

import torch

from eb_torchperf.probe import envprefixes, facts, facts_more
from eb_torchperf.measure.runner import worker_env


def test_library_names_strip_wheel_hashes():
    assert facts_more.library_name("/x/libgomp-a34b3233.so.1") == ("libgomp", "1")
    assert facts_more.library_name("libquadmath-96973f99-934c22de.so.0.0.0") == ("libquadmath",
                                                                                 "0.0.0")
    assert facts_more.library_name("libtorch_cpu.so") == ("libtorch_cpu", "")
    assert facts_more.library_name("_C.cpython-311-x86_64-linux-gnu.so") is None


def test_sysfs_helpers():
    assert facts_more._selected("always [madvise] never") == "madvise"
    assert facts_more.parse_cpulist("0-2,8,10-11") == [0, 1, 2, 8, 10, 11]


def test_env_collects_every_prefix_and_the_runner_passes_them(monkeypatch):
    names = ("TRITON_CACHE_DIR", "GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "DNNL_MAX_CPU_ISA",
             "NVIDIA_TF32_OVERRIDE", "TORCHINDUCTOR_MAX_AUTOTUNE", "LD_BIND_NOW")
    for name in names:
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("UNRELATED_VAR", "1")
    env = facts.collect_env()
    assert all(env[n] == "1" for n in names) and "UNRELATED_VAR" not in env
    passed = worker_env(dict((n, "1") for n in names + ("UNRELATED_VAR",)), "/bundle")
    assert all(passed[n] == "1" for n in names) and "UNRELATED_VAR" not in passed
    assert envprefixes.source_of("NCCL_P2P_DISABLE")[0] == "NCCL"


def test_collectors_on_this_torch():
    math = facts_more.collect_math(torch)
    assert math["float32_matmul_precision"] == "highest"
    assert math["deterministic_algorithms"] is False
    system = facts_more.collect_system(torch)
    assert system["thp_enabled"] in ("always", "madvise", "never", None)
    assert system["rlimits"]["nofile"] > 0
    libs = facts_more.collect_libraries(torch)["libraries"]
    assert "libtorch_cpu" in libs and "libc" in libs
    compiled = facts_more.collect_compile(torch)
    assert compiled["smoke"] is None and isinstance(compiled["python_h"], bool)


def test_fp32_math_mode_reads_the_flags_and_variables_in_effect(monkeypatch):
    monkeypatch.delenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", raising=False)
    monkeypatch.delenv("ONEDNN_DEFAULT_FPMATH_MODE", raising=False)
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    try:
        matmul.allow_tf32 = True  # what a module or site profile may do
        mode = facts_more.fp32_math_mode(torch).split()
    finally:
        matmul.allow_tf32 = before
    assert mode[:2] == ["float32_matmul_precision=high", "cuda_matmul_allow_tf32=True"]
    assert mode[-1] == "NVIDIA_TF32_OVERRIDE=0"
    assert "cudnn_allow_tf32=%s" % torch.backends.cudnn.allow_tf32 in mode
    assert matmul.allow_tf32 == before  # read, never set
    math = facts_more.collect_math(torch)  # the facts take the same three settings
    assert {name for name, _ in facts_more.FP32_SETTINGS} <= set(math)
