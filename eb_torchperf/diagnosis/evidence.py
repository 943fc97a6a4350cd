"""Helpers the rules share: benchmark families, evidence text, the upstream view.

Rules state their evidence as `{name: value}` with display strings for measured
figures ("28.1 % [16.2–48.5 %]"), so a Finding reads the same in the terminal,
the Markdown and the HTML report.
"""

from typing import Dict, List, NamedTuple, Optional, Sequence

from eb_torchperf.analysis import stats
from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.analysis.configdiff import cpu_capability
from eb_torchperf.records.measurements import ProbeResult, params_key
from eb_torchperf.analysis.peak import effective_cores, peak_fractions
from eb_torchperf.present.terminal import format_params, format_ratio
from eb_torchperf.diagnosis.wheelconfigs import minor_version, wheel_config_for
from eb_torchperf.diagnosis.bounds import Bound, check_bound, grade_low, lower_limits

#: Benchmarks whose time is mostly BLAS GEMM (TorchBench BERT/Linear in the #931 thread).
GEMM_BENCHES = ("matmul_fp32", "linear", "bert_layer_infer", "bert_layer_train")
#: Benchmarks that run ATen's vectorised kernels (dispatch by CPU capability).
VECTORISED_BENCHES = ("layernorm", "softmax", "gelu")
#: Benchmarks that run through oneDNN on x86-64 when it is enabled.
ONEDNN_BENCHES = ("conv3x3", "matmul_bf16")
#: ATen CPU capabilities in increasing order (`torch.backends.cpu.get_cpu_capability()`).
CAPABILITY_ORDER = ("DEFAULT", "NO AVX", "AVX", "AVX2", "AVX512")
SOURCE_931 = "https://github.com/easybuilders/easybuild/issues/931"
#: GEMM rate as a fraction of the nominal fp32 peak (eb_torchperf.analysis.peak), used where no
#: MKL reference was measured.  Optimised BLAS reach most of peak on large SGEMM (Goto
#: & van de Geijn, ACM TOMS 34(3), 2008); the reference BLAS reaches a few %; turbo and
#: the 512-size GEMM of the quick suite blur the top, hence low limits.
PEAK_ERROR = check_bound(Bound(1.0, -0.85, None, "fraction of nominal peak"))
PEAK_WARNING = check_bound(Bound(1.0, -0.60, None, "fraction of nominal peak"))

#: 0.281 -> "28.1 %" (the terminal's format, so every output reads the same).
pct = format_ratio


def bench_label(comparison: Comparison) -> str:
    """"matmul_fp32 n=512": benchmark name and parameters."""
    params = format_params(comparison.params)
    return comparison.bench + (" " + params if params else "")


def ratio_text(comparison: Comparison) -> str:
    """Relative OPS with its 95 % interval and noise flag, e.g. "28.1 % [16.2–48.5 %]"."""
    text = pct(comparison.relative_ops)
    if comparison.ci_low is not None:
        text += " [%s–%s]" % (pct(comparison.ci_low)[:-2], pct(comparison.ci_high))
    return text + (" (noisy)" if comparison.noisy else "")


def with_ratio(comparisons: Sequence[Comparison], benches: Sequence[str]) -> List[Comparison]:
    """Comparisons of `benches` that have a relative OPS (thread_scaling 'all' excluded)."""
    return [c for c in comparisons if c.bench in benches and c.relative_ops is not None]


def gemm_rows(comparisons: Sequence[Comparison]) -> List[Comparison]:
    """GEMM-family comparisons, plus the single-thread GEMM of `thread_scaling` (which
    isolates the BLAS kernel from threading)."""
    rows = with_ratio(comparisons, GEMM_BENCHES)
    rows += [c for c in comparisons if c.bench == "thread_scaling"
             and c.params.get("threads") == 1 and c.relative_ops is not None]
    return rows


def family_ratio(rows: Sequence[Comparison]) -> Optional[float]:
    """Geometric mean of the rows' relative OPS, None when there are none."""
    values = [c.relative_ops for c in rows if c.relative_ops is not None]
    return stats.geometric_mean(values) if values else None


def ratio_evidence(rows: Sequence[Comparison], prefix: str = "relative OPS") -> Dict[str, str]:
    """{"relative OPS matmul_fp32 n=512": "28.1 % [...]", ...} for the rows."""
    return {"%s %s" % (prefix, bench_label(c)): ratio_text(c) for c in rows}


def rate_evidence(rows: Sequence[Comparison]) -> Dict[str, str]:
    """{"target rate matmul_fp32 n=512": "5.86 GFLOP/s", ...} (absolute, target side)."""
    return {"target rate %s" % bench_label(c): "%.3g %s" % (c.target.value, c.target.unit)
            for c in rows if c.target is not None}


def machine(probe: ProbeResult) -> Optional[str]:
    """`platform.machine()` of the probed host ("x86_64", "aarch64")."""
    return probe.fact("cpu", "machine")


def is_x86_64(probe: ProbeResult) -> bool:
    """True on x86-64 hosts (where upstream wheels use MKL and oneDNN)."""
    return machine(probe) == "x86_64"


def env_of(probe: ProbeResult) -> Dict[str, str]:
    """Performance-relevant environment variables the probe saw (`facts["env"]`)."""
    return dict((probe.facts or {}).get("env") or {})


def cpu_max_capability(probe: ProbeResult) -> Optional[str]:
    """Highest ATen capability the CPU supports, from its flags (x86-64 only).

    AVX512 needs AVX512F/BW/DQ/VL and FMA, AVX2 needs AVX2 and FMA: the conditions
    of `compute_cpu_capability` in pytorch `aten/src/ATen/native/DispatchStub.cpp`.
    """
    if not is_x86_64(probe):
        return None
    flags = set(probe.fact("cpu", "flags") or ())
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"} <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"


def capability_rank(name: Optional[str]) -> Optional[int]:
    """Position in CAPABILITY_ORDER (case-insensitive); None for unknown names."""
    upper = (name or "").upper()
    return CAPABILITY_ORDER.index(upper) if upper in CAPABILITY_ORDER else None


class Upstream(NamedTuple):
    """What the target is held against: the reference's build or the wheel data.

    Attributes:
        label: where the values come from, for evidence ("reference torch 2.13.0+cpu").
        same_version: the values describe the target's torch minor version.
        blas_info, use_mkl, use_mkldnn, use_mpi: build settings.
        capability: CPU capability that build selects on this CPU.
    """

    label: str
    same_version: bool
    blas_info: Optional[str]
    use_mkl: Optional[bool]
    use_mkldnn: Optional[bool]
    use_mpi: Optional[bool]
    capability: Optional[str]


def upstream(target: ProbeResult, reference: Optional[ProbeResult]) -> Optional[Upstream]:
    """The reference's build when there is one, else the bundled upstream wheel data."""
    version = target.fact("torch", "version")
    if reference is not None and reference.build.blas_info is not None:
        same = minor_version(version) == minor_version(reference.fact("torch", "version"))
        return Upstream("reference torch %s" % reference.fact("torch", "version"), same,
                        reference.build.blas_info, reference.build.use_mkl,
                        reference.build.use_mkldnn, reference.build.use_mpi,
                        cpu_capability(reference))
    wheel = wheel_config_for(version, machine(target))
    if wheel is None:
        return None
    cpu_max = cpu_max_capability(target)
    capability = wheel.cpu_capability_on_avx512 if cpu_max == "AVX512" else cpu_max
    return Upstream(wheel.label, wheel.exact, wheel.blas_info, wheel.use_mkl,
                    wheel.use_mkldnn, wheel.use_mpi, capability)


def same_minor_version(target: ProbeResult, reference: Optional[ProbeResult]) -> bool:
    """True when the reference runs the target's torch major.minor version."""
    if reference is None:
        return False
    mine = minor_version(target.fact("torch", "version"))
    return mine is not None and mine == minor_version(reference.fact("torch", "version"))


def same_version_upstream(target: ProbeResult,
                          reference: Optional[ProbeResult]) -> Optional[Upstream]:
    """Upstream settings of the target's own torch version: the reference if it is
    that version, else the bundled wheel data when it has that version."""
    view = upstream(target, reference)
    if view is not None and view.same_version:
        return view
    if reference is not None:
        view = upstream(target, None)
        return view if view is not None and view.same_version else None
    return None


def cores_text(probe: ProbeResult) -> str:
    """"2 (affinity 0-1, no cgroup quota)": the cores a process may use, with why."""
    affinity = probe.fact("cpu", "affinity") or []
    quota = probe.fact("cpu", "cgroup_cpu_quota")
    span = ("%d-%d" % (affinity[0], affinity[-1]) if len(affinity) > 1
            and affinity[-1] - affinity[0] == len(affinity) - 1
            else ",".join(str(a) for a in affinity))
    return "%s (affinity %s, %s)" % (effective_cores(probe), span or "unknown",
                                     "cgroup quota %.2g CPUs" % quota if quota
                                     else "no cgroup quota")


def grade_gemm_peak(target: ProbeResult, comparisons: Sequence[Comparison]):
    """Grade the best GEMM rate against the nominal peak (PEAK_ERROR / PEAK_WARNING).

    Returns:
        (severity, evidence, fraction) for the GEMM benchmark closest to its peak,
        None when no GEMM with a known peak was measured.
    """
    fractions = peak_fractions(comparisons, target)
    known = [(fractions[(c.bench, params_key(c.params))], c) for c in comparisons
             if c.bench in GEMM_BENCHES + ("thread_scaling",)
             and (c.bench, params_key(c.params)) in fractions]
    if not known:
        return None
    (best, peak), comparison = max(known, key=lambda item: item[0][0])
    evidence = {"best GEMM rate": "%s: %.3g GFLOP/s" % (bench_label(comparison),
                                                        comparison.target.value),
                "fraction of nominal peak": pct(best), "nominal peak": peak.basis,
                "bounds": lower_limits(PEAK_ERROR, PEAK_WARNING)}
    return grade_low(best, PEAK_ERROR, PEAK_WARNING), evidence, best
