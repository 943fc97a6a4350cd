"""GPU view model: peak table lookup and rows computed from the H200 audit."""

import pathlib

import pytest

from eb_torchperf.present import gpusummary
from eb_torchperf.diagnosis import peak
from eb_torchperf.records.measurements import load_results
from testdata import record

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("name, bf16, source_part", [
    ("NVIDIA H200", 989.5, "h200"), ("NVIDIA H200 NVL", 835.5, "h200"),
    ("NVIDIA H100 80GB HBM3", 989.5, "h100"), ("NVIDIA H100 PCIe", 756.5, "h100"),
    ("NVIDIA GH200 480GB", 989.5, "grace-hopper"), ("NVIDIA A100-SXM4-80GB", 312.0, "a100")])
def test_peak_for_known_devices(name, bf16, source_part):
    peaks, source = peak.gpu_peak_for(name)
    assert peaks["bf16"] == bf16
    assert source_part in source


def test_peak_for_unknown_device():
    assert peak.gpu_peak_for("NVIDIA GeForce RTX 4090") is None
    assert peak.gpu_peak_for(None) is None


def test_rows_of_the_h200_audit():
    result = load_results(DATA / "h200-quick-normal.json")
    comparisons = record(result)
    assert record(result).gpu["device"] == "NVIDIA H200"
    (gemm,) = gpusummary.gemm_rows(comparisons)
    assert gemm.dtype == "bf16" and round(gemm.tflops, 1) == 644.3
    # the fastest sample of the target (pair 0) is also the fastest of both sides
    assert round(gemm.burst_tflops, 1) == 681.6
    assert round(gemm.of_peak, 4) == round(681.585 / 989.5, 4) and gemm.of_best == 1.0
    (ref,) = gpusummary.gemm_rows(comparisons, side="reference")
    assert round(ref.burst_tflops, 1) == 680.9
    assert round(ref.of_best, 4) == round(680.913 / 681.585, 4)
    rows = {(d.label.split()[0], d.side): d for d in gpusummary.dispatch_rows(comparisons)}
    linear = rows[("linear_cuda_fwd", "target")]
    assert (round(linear.cpu_us, 1), round(linear.gpu_us, 1), linear.bound) == (
        28.6, 101.4, "GPU-bound")
    assert rows[("launch_cuda", "reference")].bound == "CPU-bound"
    units = {r.label.split()[0]: r.unit for r in gpusummary.rate_rows(comparisons)}
    assert units == {"launch_cuda": "µs/op", "copy_host_device": "GB/s", "copy_d2d": "TB/s"}


def test_config_rows_mark_the_differing_setting_only():
    result = load_results(DATA / "h200-quick-no-caching.json")
    rows = gpusummary.gpu_config_rows(result.target, result.reference)
    differing = [(r.label, r.target, r.reference) for r in rows if r.differs]
    assert differing == [("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", "unset")]
    assert dict((r.label, r.target) for r in rows)["SDPA backend chosen"] == "cudnn"


def test_allreduce_row_of_the_two_gpu_audit():
    """One process per GPU (probe/collective.py), 2 worker pairs on 2x H200."""
    result = load_results(DATA / "h200x2-allreduce.json")
    (row,) = gpusummary.rate_rows(record(result))
    assert row.label == "allreduce_nccl mib=256 gpus=2" and row.unit == "GB/s"
    assert (round(row.target, 1), round(row.reference, 1)) == (296.3, 295.3)
    assert {s["bench"] for s in result.skipped} == set()  # --only allreduce_nccl


def test_burst_gemm_of_the_two_gpu_quick_audit_is_within_95_percent_of_cublas_best():
    """bf16 8192^3: best sample vs the best cuBLAS figure measured apart on that machine
    type (reports/examples/h200-cublas-best.json: 774.6 TFLOP/s, 4096^3 after warm-up)."""
    result = load_results(DATA / "h200x2-quick-normal.json")
    (gemm,) = gpusummary.gemm_rows(record(result))
    assert (round(gemm.tflops, 1), round(gemm.burst_tflops, 1)) == (708.1, 785.3)
    assert gemm.burst_tflops / 774.6 >= 0.95


def test_build_table_shows_the_loaded_cudnn_not_torchs_compact_text():
    """torch 2.11 prints "CuDNN 91.9" for cuDNN 9.19.0 in its config text."""
    from eb_torchperf.present.configdiff import config_rows
    result = load_results(DATA / "h200x2-quick-normal.json")
    assert result.target.build.cudnn_runtime == "91.9"
    rows = {r.label: r.target for r in config_rows(result.target, result.reference)}
    assert rows["cuDNN"] == "9.19.0"
