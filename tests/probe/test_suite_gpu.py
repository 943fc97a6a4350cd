"""GPU suite registration, plans, work per call and availability without a GPU."""

import sys

import pytest

from eb_torchperf.probe import registry, suite_gpu
from eb_torchperf.measure.runner import ProbeBundle, Worker

NO_GPU = {"gpu": {"available": False, "reason": "this torch is built without CUDA",
                  "devices": []}}
ONE_GPU = {"gpu": {"available": True, "devices": [{"name": "NVIDIA H200", "capability": "9.0"}]}}


def _cuda_benches():
    return [b for b in registry.load_suites().values() if b.device == "cuda"]


def test_quick_gpu_plan_covers_every_gpu_family_once_or_twice():
    plan = registry.plan("quick", ("cuda",))
    assert [name for name, _ in plan] == ["gemm_cuda", "gemm_cuda", "linear_cuda_fwd",
                                          "launch_cuda", "copy_host_device", "copy_d2d",
                                          "sdpa_cuda", "conv_cuda"]
    assert [p["dtype"] for name, p in plan if name == "gemm_cuda"] == ["bf16", "tf32"]
    assert plan[2][1] == {"dtype": "bf16", "tokens": 8192, "in": 2048, "out": 2048}


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
    assert len(benches) == 11 + 14  # the GPU suite's, the models suite's 7 models x 2 modes
    for bench in benches:
        assert bench.available(None, NO_GPU) == "no GPU: this torch is built without CUDA"


class _FakeDist:
    def __init__(self, nccl):
        self.nccl = nccl

    def is_available(self):
        return True

    def is_nccl_available(self):
        return self.nccl


class _FakeTorch:
    def __init__(self, nccl=True):
        self.distributed = _FakeDist(nccl)


def _gpus(count):
    return {"gpu": dict(ONE_GPU["gpu"], devices=ONE_GPU["gpu"]["devices"] * count)}


@pytest.mark.parametrize("name, gpus, reason", [
    ("allreduce_nccl", 1, "NCCL all-reduce over 2 GPUs needs 2 GPUs (this machine shows 1)"),
    ("allreduce_nccl", 2, None),
    ("allreduce_nccl_4gpu", 2, "NCCL all-reduce over 4 GPUs needs 4 GPUs (this machine shows 2)"),
    ("allreduce_nccl_4gpu", 8, None),
    ("allreduce_nccl_8gpu", 4, "NCCL all-reduce over 8 GPUs needs 8 GPUs (this machine shows 4)"),
])
def test_allreduce_needs_as_many_gpus_as_ranks(name, gpus, reason):
    assert registry.REGISTRY[name].available(_FakeTorch(), _gpus(gpus)) == reason


def test_allreduce_without_nccl_backend_says_so():
    assert registry.REGISTRY["allreduce_nccl"].available(_FakeTorch(nccl=False), _gpus(2)) == (
        "this torch has no NCCL backend in torch.distributed")


def test_allreduce_rows_are_full_suite_only_with_one_rank_per_gpu():
    plan = registry.plan("full", ("cuda",))
    assert [p for name, p in plan if name.startswith("allreduce_nccl")] == [
        {"mib": 256, "gpus": 2}, {"mib": 256, "gpus": 4}, {"mib": 256, "gpus": 8}]
    assert not [name for name, _ in registry.plan("quick", ("cuda",))
                if name.startswith("allreduce")]


@pytest.mark.parametrize("name, params, expected", [
    ("gemm_cuda", {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192}, (2 * 8192.0 ** 3, "flop")),
    ("linear_cuda_train", {"dtype": "bf16", "tokens": 8192, "in": 2048, "out": 2048},
     (6.0 * 8192 * 2048 * 2048, "flop")),
    ("copy_d2d", {"mib": 1024}, (2.0 * 2 ** 30, "byte")),
    ("copy_host_device", {"direction": "h2d", "memory": "pinned", "mib": 64},
     (64.0 * 2 ** 20, "byte")),
    ("allreduce_nccl", {"mib": 256, "gpus": 2}, (256.0 * 2 ** 20, "byte")),  # 2(n-1)/n = 1
    ("allreduce_nccl_8gpu", {"mib": 256, "gpus": 8}, (256.0 * 2 ** 20 * 14 / 8, "byte")),
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
