"""GPU view of an audit: GEMM against the card's peak, CPU vs GPU time per call,
launch latency, copy bandwidths, and the GPU configuration side by side.

Pure functions from an audit's analysis (records.analysis.Analysis: its comparisons,
the card's peak, the CPU-bound ratio, the row families) to rows of numbers (SI units
in, display units chosen here); rendering is left to the caller (cli.gpu).
"""

from typing import Dict, List, NamedTuple, Optional

from eb_torchperf.present.configdiff import MISSING, ConfigRow
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.present.terminal import display_unit


class GemmRow(NamedTuple):
    """One GEMM result of one side, in TFLOP/s.

    Attributes:
        tflops: median over all samples: the rate the card holds under the audit's
            seconds of load (an H200 reaches its power cap within ~20 ms of bf16 GEMM
            and lowers its clock: 1980 -> 1545 MHz, reports/examples/h200-gpu-suite.md).
        burst_tflops: the fastest sample (2 or more back-to-back calls): the rate before
            the power cap bites, what one-shot cuBLAS benchmarks report.
        peak_tflops: the card's dense datasheet peak (PEAK_TFLOPS), None if unknown.
        of_peak: burst_tflops / peak_tflops (None if the peak is unknown).
        of_best: burst_tflops / the fastest sample of this dtype over every GEMM shape
            and both sides of the audit: 1.0 for the best cuBLAS figure measured, lower
            where a shape or a side falls short of it.
    """

    label: str
    dtype: str
    tflops: float
    burst_tflops: float
    peak_tflops: Optional[float]
    of_peak: Optional[float]
    of_best: float


def _label(c) -> str:
    return "%s %s" % (c.bench, " ".join("%s=%s" % kv for kv in c.params.items()))


def _burst(rate) -> float:
    """TFLOP/s of a GEMM rate's fastest sample (its median where samples are unknown)."""
    return (rate.best_value or rate.value) / 1e3


def gemm_rows(analysis: Analysis, side: str = "target") -> List[GemmRow]:
    """GEMM rows of `side` (benchmark gemm_cuda), with the card's peak
    (Analysis.gpu: diagnosis.peak.PEAK_TFLOPS of the audited device)."""
    gemms = [c for c in analysis.comparisons if c.bench == "gemm_cuda"]
    best: Dict[str, float] = {}
    for c in gemms:
        for rate in (c.target, c.reference):
            if rate is not None:
                best[c.params["dtype"]] = max(best.get(c.params["dtype"], 0.0), _burst(rate))
    peaks = (analysis.gpu.get("peak") or ({}, None))[0]
    rows = []
    for c in gemms:
        rate = getattr(c, side)
        if rate is None:
            continue
        dtype, burst = c.params["dtype"], _burst(rate)
        peak = peaks.get(dtype)
        rows.append(GemmRow(_label(c), dtype, rate.value / 1e3, burst, peak,
                            burst / peak if peak else None, burst / best[dtype]))
    return rows


class DispatchRow(NamedTuple):
    """CPU and GPU µs per call of one benchmark on one side, and which one bounds it."""

    label: str
    side: str
    cpu_us: float
    gpu_us: float
    wall_us: float
    ratio: float
    bound: str


def dispatch_rows(analysis: Analysis) -> List[DispatchRow]:
    """Rows for every comparison whose rates carry cpu_s and gpu_s (both sides); bound
    by the CPU from Analysis.gpu's cpu_bound_ratio (diagnosis.rules.gpu) on."""
    rows, ratio = [], analysis.gpu["cpu_bound_ratio"]
    for c in analysis.comparisons:
        for side in ("target", "reference"):
            rate = getattr(c, side)
            if rate is None or "cpu_s" not in rate.extra_s or "gpu_s" not in rate.extra_s:
                continue
            cpu, gpu = rate.extra_s["cpu_s"], rate.extra_s["gpu_s"]
            rows.append(DispatchRow(_label(c), side, cpu * 1e6, gpu * 1e6, rate.median_s * 1e6,
                                    cpu / gpu, "CPU-bound" if cpu / gpu >= ratio
                                    else "GPU-bound"))
    return rows


class RateRow(NamedTuple):
    """A launch or copy benchmark: its rate on both sides (None where not measured)."""

    label: str
    unit: str
    target: Optional[float]
    reference: Optional[float]


#: Families with a table of their own (GEMM against the peak, CPU vs GPU µs per call);
#: every other CUDA benchmark goes to rate_rows.
OWN_TABLE_FAMILIES = ("gemm", "dispatch")


def rate_rows(analysis: Analysis) -> List[RateRow]:
    """Rates (µs/op, GB/s or TB/s, TFLOP/s) of the CUDA benchmarks outside
    OWN_TABLE_FAMILIES: launch, copies, attention, convolution, all-reduce."""
    rows = []
    for c in analysis.comparisons:
        device, _, family = (analysis.families.get(c.bench) or "").partition("/")
        if device != "cuda" or family in OWN_TABLE_FAMILIES or not (c.target or c.reference):
            continue
        largest = max(r.value for r in (c.target, c.reference) if r is not None)
        unit, scale = display_unit((c.target or c.reference).unit, largest)
        rows.append(RateRow(_label(c), unit, c.target and c.target.value / scale,
                            c.reference and c.reference.value / scale))
    return rows


def _fmt_version(value) -> str:
    if value is None:
        return MISSING
    return ".".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)


def _first_call(gpu: dict) -> str:
    seconds = gpu.get("first_call_s")
    return MISSING if seconds is None else "%.0f ms" % (seconds * 1e3)


def _device(gpu: dict) -> str:
    devices = gpu.get("devices") or []
    if not devices:
        return gpu.get("reason") or MISSING
    first = devices[0]
    return "%d x %s (sm %s)" % (len(devices), first["name"], first["capability"])


#: label -> getter(gpu facts dict) -> display string.  Order is display order.
GPU_CONFIG_ROWS = [
    ("GPU", _device),
    ("arch list", lambda g: " ".join(g.get("arch_list") or ()) or MISSING),
    ("arch support", lambda g: ", ".join(d.get("arch_support", MISSING)
                                          for d in g.get("devices") or ()) or MISSING),
    ("CUDA build / runtime / driver", lambda g: " / ".join(
        _fmt_version((g.get("cuda") or {}).get(k)) for k in ("build", "runtime", "driver"))),
    ("cuDNN runtime / build", lambda g: " / ".join(
        _fmt_version((g.get("cudnn") or {}).get(k)) for k in ("runtime", "build"))),
    ("NCCL", lambda g: _fmt_version(g.get("nccl"))),
    ("allocator backend", lambda g: _fmt_version(g.get("allocator_backend"))),
    ("SDPA backend chosen", lambda g: _fmt_version((g.get("sdpa") or {}).get("backend"))),
    ("first CUDA call", _first_call),
] + [(name, lambda g, n=name: (g.get("env") or {}).get(n) or "unset")
     for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
                  "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING")]


def gpu_config_rows(target: ProbeResult, reference: Optional[ProbeResult]) -> List[ConfigRow]:
    """GPU configuration side by side (probe facts "gpu"); first-call time never
    counts as a difference (it varies run to run)."""
    rows = []
    for label, getter in GPU_CONFIG_ROWS:
        t = getter(target.facts.get("gpu") or {})
        r = getter(reference.facts.get("gpu") or {}) if reference else ""
        rows.append(ConfigRow(label, t, r, bool(reference) and t != r
                              and label != "first CUDA call"))
    return rows
