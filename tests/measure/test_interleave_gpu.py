"""An audit with the GPU part on a machine without a GPU: the CPU part runs, the GPU
benchmarks are skipped with their reason (real workers in this interpreter)."""

import sys

import pytest

from eb_torchperf.measure.interleave import AuditRun, RunnerOptions


def test_gpu_part_is_skipped_and_cpu_part_runs():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    options = RunnerOptions(pairs=1, min_rounds=1, max_rounds=1, block_s=0.01,
                            bench_budget_s=0.1)
    result = AuditRun(sys.executable, None, "quick", options, only=["dispatch", "launch_cuda"],
                      devices=("cpu", "cuda")).run()
    assert result.complete
    assert [r.bench for r in result.results] == ["dispatch"]
    assert result.results[0].extra_s == {}
    assert [(s["bench"], s["side"]) for s in result.skipped] == [("launch_cuda", "target")]
    assert result.skipped[0]["reason"].startswith("no GPU: ")
    assert result.target.facts["gpu"]["available"] is False
