"""This machine's nominal peak, and each benchmark's rate as a fraction of it.

Used when there is no reference interpreter (and shown beside relative OPS when
there is): GEMM-like benchmarks (GFLOP/s) against the computed fp32 FLOP/s peak,
memory-bound ones (GB/s) against the bandwidth the `add_bandwidth` benchmark
measured on the same side.

The computed peak is nominal: cores x clock x fp32 FLOP per cycle per core.  The
clock is the cpufreq maximum where readable, else the "cpu MHz" of /proc/cpuinfo,
else half the x86 "bogomips" (the TSC rate); the last two are base clocks, so with
turbo a fast GEMM can exceed 100 %.  The thresholds that use these fractions are
far below 100 % for that reason.
"""

import dataclasses
from typing import Dict, Optional, Sequence, Tuple

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.diagnosis.facts import usable_cores
from eb_torchperf.diagnosis.families import BANDWIDTH_BOUND
from eb_torchperf.records.measurements import ProbeResult, params_key

#: fp32 FLOP per cycle and core: two FMA pipes x vector lanes x 2 (multiply + add).
#: Sources: Intel 64 and IA-32 Architectures Optimization Reference Manual (two
#: 512-bit FMA units on Xeon Scalable), AMD Software Optimization Guide for Family
#: 19h (Zen 3/4: two 256-bit FMA pipes; 512-bit ops are split in two).
FLOP_PER_CYCLE_FP32 = {"avx512": 64, "avx2": 32, "avx": 16, "sse": 8, "asimd": 16}
#: AMD families whose AVX512 runs on 256-bit FMA pipes (0x19 = 25: Zen 3 and Zen 4).
AMD_HALF_WIDTH_AVX512_FAMILIES = ("25",)
#: Name of the benchmark whose measured rate is the memory-bandwidth peak.
BANDWIDTH_BENCH = "add_bandwidth"


#: The CUDA GEMM benchmark, measured against the card's datasheet peak of its dtype.
GPU_GEMM_BENCH = "gemm_cuda"

#: Dense (no 2:4 sparsity) peak TFLOP/s by device-name substring, first match wins
#: (so "GH200" and the NVL/PCIe parts come before "H200"/"H100").
#: The datasheets give tensor-core figures "with sparsity"; dense is half of those.
#: FP32 is the non-tensor-core rate.
_HOPPER_SXM = {"bf16": 989.5, "fp16": 989.5, "tf32": 494.5, "fp32": 67.0}
_HOPPER_NVL = {"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0}
_DATASHEET = "https://www.nvidia.com/en-us/data-center/%s/"
PEAK_TFLOPS: Tuple[Tuple[str, Dict[str, float], str], ...] = (
    ("GH200", _HOPPER_SXM, _DATASHEET % "grace-hopper-superchip"),
    ("H200 NVL", _HOPPER_NVL, _DATASHEET % "h200"),
    ("H200", _HOPPER_SXM, _DATASHEET % "h200"),
    ("H100 NVL", _HOPPER_NVL, _DATASHEET % "h100"),
    ("H100 PCIe", {"bf16": 756.5, "fp16": 756.5, "tf32": 378.0, "fp32": 51.0},
     _DATASHEET % "h100"),
    ("H100", _HOPPER_SXM, _DATASHEET % "h100"),
    ("A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}, _DATASHEET % "a100"),
)


def gpu_peak_for(device_name: Optional[str]) -> Optional[Tuple[Dict[str, float], str]]:
    """(dtype -> dense peak TFLOP/s, source URL) of a device name, None if unknown."""
    for pattern, peaks, source in PEAK_TFLOPS:
        if device_name and pattern in device_name:
            return peaks, source
    return None


def device_name(probe: Optional[ProbeResult]) -> Optional[str]:
    """Name of the probe's first CUDA device (torch.cuda.get_device_properties)."""
    devices = ((probe.facts if probe else None) or {}).get("gpu", {}).get("devices") or []
    return devices[0].get("name") if devices else None


@dataclasses.dataclass(frozen=True)
class Peak:
    """A computed peak rate.

    Attributes:
        value: rate in units per second (FLOP/s or byte/s).
        unit: "GFLOP/s" or "GB/s" (the display unit of `value / 1e9`).
        basis: how it was obtained, e.g. "2 cores x 2.60 GHz x 32 FLOP/cycle (avx512)".
        source: URL of a published figure it comes from ("" for computed peaks).
    """

    value: float
    unit: str
    basis: str
    source: str = ""


def vector_isa(cpu: dict) -> Optional[str]:
    """Widest fp32 FMA vector ISA from the probe's CPU flags (`/proc/cpuinfo`)."""
    flags = set(cpu.get("flags") or ())
    if {"avx512f", "fma"} <= flags:
        return "avx512"
    if {"avx2", "fma"} <= flags:
        return "avx2"
    if "avx" in flags:
        return "avx"
    if "asimd" in flags:
        return "asimd"
    if cpu.get("machine") == "x86_64":
        return "sse"
    return None


def flop_per_cycle(cpu: dict) -> Optional[int]:
    """fp32 FLOP per cycle and core for this CPU (see FLOP_PER_CYCLE_FP32)."""
    isa = vector_isa(cpu)
    if isa is None:
        return None
    if (isa == "avx512" and cpu.get("vendor") == "AuthenticAMD"
            and str(cpu.get("family")) in AMD_HALF_WIDTH_AVX512_FAMILIES):
        return FLOP_PER_CYCLE_FP32["avx2"]
    return FLOP_PER_CYCLE_FP32[isa]


def clock_mhz(cpu: dict) -> Tuple[Optional[float], str]:
    """(MHz, which source) from cpufreq max, "cpu MHz", or bogomips / 2 (x86)."""
    if cpu.get("max_mhz"):
        return float(cpu["max_mhz"]), "cpufreq max"
    if cpu.get("mhz"):
        return float(cpu["mhz"]), "cpu MHz"
    if cpu.get("bogomips") and cpu.get("machine") == "x86_64":
        return float(cpu["bogomips"]) / 2, "bogomips/2"
    return None, "unknown"


def flops_peak(cpu: dict, cores: int) -> Optional[Peak]:
    """Nominal fp32 peak of `cores` cores; None when the clock or ISA is unknown."""
    per_cycle = flop_per_cycle(cpu)
    mhz, source = clock_mhz(cpu)
    if not per_cycle or not mhz or cores < 1:
        return None
    basis = "%d core%s x %.2f GHz (%s) x %d FLOP/cycle (%s)" % (
        cores, "" if cores == 1 else "s", mhz / 1000, source, per_cycle, vector_isa(cpu))
    return Peak(cores * mhz * 1e6 * per_cycle, "GFLOP/s", basis)


def threads_used(probe: ProbeResult, params: dict) -> Optional[int]:
    """Threads a benchmark ran with: its `threads` parameter, else torch's intra-op
    threads capped at the effective cores."""
    cores = usable_cores(probe)
    if params.get("threads") == 1:
        return 1
    if params.get("threads") == "all":
        return cores
    threads = probe.fact("torch", "intra_op_threads")
    if threads is None or cores is None:
        return threads or cores
    return min(threads, cores)


def gpu_gemm_peak(probe: ProbeResult, dtype: Optional[str]) -> Optional[Peak]:
    """Dense datasheet peak of the probe's first CUDA device for `dtype` (bf16, fp16,
    tf32, fp32), from PEAK_TFLOPS; None for an unknown device or dtype."""
    name = device_name(probe)
    found = gpu_peak_for(name)
    if found is None or dtype not in found[0]:
        return None
    peaks, source = found
    return Peak(peaks[dtype] * 1e12, "GFLOP/s",
                "%s dense %s datasheet peak %.1f TFLOP/s" % (name, dtype, peaks[dtype]), source)


def peak_for(comparison: Comparison, probe: ProbeResult,
             bandwidth: Optional[float]) -> Optional[Peak]:
    """The peak one target-side benchmark is measured against, None if not known
    (the FLOP/s peak is fp32's, so other dtypes have none)."""
    rate = comparison.target
    if rate is None:
        return None
    if comparison.bench == GPU_GEMM_BENCH:
        return gpu_gemm_peak(probe, comparison.params.get("dtype"))
    if rate.unit == "GFLOP/s" and comparison.params.get("dtype", "float32") == "float32":
        cores = threads_used(probe, comparison.params)
        return flops_peak((probe.facts or {}).get("cpu") or {}, cores or 0)
    if rate.unit == "GB/s" and bandwidth and comparison.bench in BANDWIDTH_BOUND:
        return Peak(bandwidth * 1e9, "GB/s", "measured by %s" % BANDWIDTH_BENCH)
    return None


def peak_fractions(comparisons: Sequence[Comparison],
                   probe: Optional[ProbeResult]) -> Dict[tuple, Tuple[float, Peak]]:
    """Target rate / peak per benchmark key (bench, canonical params).

    Returns:
        key -> (fraction, Peak) for the benchmarks whose peak is known.
    """
    if probe is None:
        return {}
    bandwidth = next((c.target.value for c in comparisons
                      if c.bench == BANDWIDTH_BENCH and c.target is not None), None)
    out = {}
    for comparison in comparisons:
        peak = peak_for(comparison, probe, bandwidth)
        if peak is not None:
            fraction = comparison.target.value * 1e9 / peak.value
            out[(comparison.bench, params_key(comparison.params))] = (fraction, peak)
    return out
