"""GPU suite registration, plans, work per call and availability without a GPU."""

import sys

import pytest

from eb_torchperf.probe import registry, suite_gpu
from eb_torchperf.runner import ProbeBundle, Worker

NO_GPU = {"gpu": {"available": False, "reason": "this torch is built without CUDA",
                  "devices": []}}
ONE_GPU = {"gpu": {"available": True, "devices": [{"name": "NVIDIA H200", "capability": "9.0"}]}}


def _cuda_benches():
    return [b for b in registry.load_suites().values() if b.device == "cuda"]


def test_quick_gpu_plan_is_the_five_cheap_entries():
    plan = registry.plan("quick", ("cuda",))
    assert [name for name, _ in plan] == ["gemm_cuda", "linear_cuda_fwd", "launch_cuda",
                                          "copy_host_device", "copy_d2d"]
    assert plan[1][1] == {"dtype": "bf16", "tokens": 8192, "in": 2048, "out": 2048}


def test_full_gpu_plan_has_four_gemm_precisions_and_the_published_linear_shape():
    plan = registry.plan("full", ("cuda",))
    dtypes = {p["dtype"] for name, p in plan if name == "gemm_cuda"}
    assert dtypes == {"bf16", "fp16", "tf32", "fp32"}
    assert ("linear_cuda_train", {"dtype": "bf16", "tokens": 8192, "in": 2048,
                                  "out": 2048}) in plan
    assert {p["backend"] for name, p in plan if name == "sdpa_cuda"} == {
        "default", "flash", "efficient", "math"}


def test_cpu_plan_has_no_cuda_benchmark():
    assert all(registry.REGISTRY[name].device == "cpu"
               for name, _ in registry.plan("full", ("cpu",)))


def test_every_cuda_benchmark_names_the_missing_gpu():
    benches = _cuda_benches()
    assert len(benches) == 9
    for bench in benches:
        assert bench.available(None, NO_GPU) == "no GPU: this torch is built without CUDA"


def test_allreduce_needs_two_gpus():
    bench = registry.REGISTRY["allreduce_nccl"]
    assert bench.available(None, ONE_GPU) == (
        "NCCL all-reduce needs 2 or more GPUs (this machine shows 1)")
    two = {"gpu": dict(ONE_GPU["gpu"], devices=ONE_GPU["gpu"]["devices"] * 2)}
    assert bench.available(None, two) is None


@pytest.mark.parametrize("name, params, expected", [
    ("gemm_cuda", {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192}, (2 * 8192.0 ** 3, "flop")),
    ("linear_cuda_train", {"dtype": "bf16", "tokens": 8192, "in": 2048, "out": 2048},
     (6.0 * 8192 * 2048 * 2048, "flop")),
    ("copy_d2d", {"mib": 1024}, (2.0 * 2 ** 30, "byte")),
    ("copy_host_device", {"direction": "h2d", "memory": "pinned", "mib": 64},
     (64.0 * 2 ** 20, "byte")),
    ("allreduce_nccl", {"mib": 256, "gpus": 2}, (256.0 * 2 ** 20, "byte")),  # 2(n-1)/n = 1
    ("launch_cuda", {"sync": False}, (1.0, "op")),
])
def test_work_per_call(name, params, expected):
    assert registry.REGISTRY[name].work(params) == expected


def test_dtype_table_enables_tf32_only_for_tf32():
    assert {name for name, (_, tf32) in suite_gpu.DTYPES.items() if tf32} == {"tf32"}


def test_worker_reports_the_reason_on_a_cpu_only_torch():
    """A real worker in this interpreter: availability of a CUDA benchmark."""
    pytest.importorskip("torch")
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with ProbeBundle() as bundle, Worker(sys.executable, bundle.path) as worker:
        reply = worker.request("availability", 120, bench="gemm_cuda")
    assert reply["ok"] is True
    assert reply["reason"].startswith("no GPU: ")
