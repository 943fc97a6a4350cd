"""Nominal peak from CPU facts, and fractions of it per benchmark."""

import pytest

from eb_torchperf.diagnosis.peak import clock_mhz, flop_per_cycle, flops_peak, peak_fractions, threads_used

from auditcases import golden_probe, target_only, timed_only

ZEN4 = {"machine": "x86_64", "vendor": "AuthenticAMD", "family": "25", "mhz": 2596.13,
        "bogomips": 5192.26, "flags": ["avx", "avx2", "avx512f", "fma"]}


@pytest.mark.parametrize("cpu, per_cycle", [
    (ZEN4, 32),                                                     # 512-bit ops on 256-bit pipes
    (dict(ZEN4, vendor="GenuineIntel", family="6"), 64),            # two 512-bit FMA units
    (dict(ZEN4, family="26"), 64),                                  # Zen 5
    (dict(ZEN4, flags=["avx", "avx2", "fma"]), 32),
    (dict(ZEN4, flags=["avx"]), 16),
    (dict(ZEN4, flags=[]), 8),
    (dict(ZEN4, machine="aarch64", flags=["asimd"]), 16),
    (dict(ZEN4, machine="riscv64", flags=[]), None),
])
def test_flop_per_cycle(cpu, per_cycle):
    assert flop_per_cycle(cpu) == per_cycle


def test_clock_sources_in_order():
    assert clock_mhz(dict(ZEN4, max_mhz=3700.0)) == (3700.0, "cpufreq max")
    assert clock_mhz(ZEN4) == (2596.13, "cpu MHz")
    assert clock_mhz(dict(ZEN4, mhz=None)) == (2596.13, "bogomips/2")
    assert clock_mhz(dict(ZEN4, mhz=None, machine="aarch64")) == (None, "unknown")


def test_flops_peak_of_the_dev_machine():
    peak = flops_peak(ZEN4, 2)
    assert peak.value == pytest.approx(2 * 2596.13e6 * 32)
    assert peak.basis == "2 cores x 2.60 GHz (cpu MHz) x 32 FLOP/cycle (avx512)"
    assert flops_peak(dict(ZEN4, mhz=None, bogomips=None), 2) is None


def test_fractions_use_the_threads_each_benchmark_ran_with():
    debian = golden_probe("target")  # torch runs 1 intra-op thread on 2 cores
    assert threads_used(debian, {}) == 1
    assert threads_used(debian, {"threads": "all"}) == 2
    rows = [target_only("matmul_fp32", {"n": 512}, 41.5),
            target_only("thread_scaling", {"n": 512, "threads": "all"}, 41.5),
            target_only("matmul_bf16", {"n": 512, "dtype": "bfloat16"}, 41.5),
            timed_only("add_bandwidth", {"numel": 1}, 1e-3),
            timed_only("layernorm", {"rows": 1}, 2e-3),
            timed_only("denormal", {"values": "normal"}, 1e-4)]
    fractions = {key[0]: round(value[0], 3) for key, value in peak_fractions(rows, debian).items()}
    # 41.5 GFLOP/s is half of one core's 83.1 and a quarter of two cores'; bf16 and the
    # cache-resident denormal benchmark have no peak; layernorm runs at half the add bandwidth
    assert fractions == {"matmul_fp32": 0.5, "thread_scaling": 0.25, "add_bandwidth": 1.0,
                         "layernorm": 0.5}


def test_cuda_gemm_is_measured_against_the_cards_datasheet_peak():
    import pathlib

    from eb_torchperf.analysis.compare import compare
    from eb_torchperf.records.measurements import load_results
    from eb_torchperf.present.report.render import peak_note

    data = pathlib.Path(__file__).resolve().parents[1] / "data"
    result = load_results(data / "h200-quick-normal.json")
    fractions = peak_fractions(compare(result), result.target)
    gemm = {k: v for k, v in fractions.items() if k[0] == "gemm_cuda"}
    ((fraction, peak),) = gemm.values()
    assert peak.value == 989.5e12 and peak.unit == "GFLOP/s"
    assert round(fraction * 989.5, 1) == 644.3  # median 644.3 TFLOP/s of the target
    assert peak.basis == "NVIDIA H200 dense bf16 datasheet peak 989.5 TFLOP/s"
    assert peak.source == "https://www.nvidia.com/en-us/data-center/h200/"
    assert ("CUDA GEMM against the card's dense peak (NVIDIA H200 dense bf16 datasheet peak "
            "989.5 TFLOP/s, https://www.nvidia.com/en-us/data-center/h200/; median rate"
            in peak_note(fractions))
