"""Helpers the rules share: evidence values of measured rows, and the upstream view.

Evidence is data: measured figures are `records.findings.quantity` dicts (raw number,
unit, interval), config facts are their raw values; present/units.py formats them
for every output.  Benchmark groups come from diagnosis/families.py (the registry's
tags), facts from diagnosis/facts.py.
"""

from typing import Dict, List, NamedTuple, Optional, Sequence

from eb_torchperf.analysis import stats
from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.diagnosis.bounds import Bound, check_bound, grade_low, lower_limits
from eb_torchperf.diagnosis.facts import (best_capability, cpu_capability, is_x86_64, machine,
                                         usable_cores)
from eb_torchperf.diagnosis.families import (GEMM_BENCHES, ONEDNN_BENCHES,  # noqa: F401
                                            VECTORISED_BENCHES)
from eb_torchperf.diagnosis.peak import peak_fractions
from eb_torchperf.diagnosis.wheelconfigs import minor_version, wheel_config_for
from eb_torchperf.records.findings import quantity
from eb_torchperf.records.measurements import ProbeResult, params_key

SOURCE_931 = "https://github.com/easybuilders/easybuild/issues/931"
#: GEMM rate as a fraction of the nominal fp32 peak (eb_torchperf.diagnosis.peak), used
#: where no MKL reference was measured.  Optimised BLAS reach most of peak on large SGEMM
#: (Goto & van de Geijn, ACM TOMS 34(3), 2008); the reference BLAS reaches a few %; turbo
#: and the 512-size GEMM of the quick suite blur the top, hence low limits.
PEAK_ERROR = check_bound(Bound(1.0, -0.85, None, "fraction of nominal peak"))
PEAK_WARNING = check_bound(Bound(1.0, -0.60, None, "fraction of nominal peak"))


def bench_label(comparison) -> str:
    """"matmul_fp32 n=512": benchmark name and parameters (an evidence key) of a
    Comparison, or of anything with .bench and .params (a trial row)."""
    params = " ".join("%s=%s" % (k, v) for k, v in comparison.params.items())
    return comparison.bench + (" " + params if params else "")


def ratio_value(comparison: Comparison) -> dict:
    """Relative OPS of one row as a quantity: ratio, 95 % interval, noise flag."""
    return quantity(comparison.relative_ops, "ratio", comparison.ci_low, comparison.ci_high,
                    noisy=bool(comparison.noisy))


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


def ratio_evidence(rows: Sequence[Comparison], prefix: str = "relative OPS") -> Dict[str, dict]:
    """{"relative OPS matmul_fp32 n=512": quantity(0.281, "ratio", ...), ...}."""
    return {"%s %s" % (prefix, bench_label(c)): ratio_value(c) for c in rows}


def rate_evidence(rows: Sequence[Comparison]) -> Dict[str, dict]:
    """{"target rate matmul_fp32 n=512": quantity(5.86, "GFLOP/s"), ...} (target side)."""
    return {"target rate %s" % bench_label(c): quantity(c.target.value, c.target.unit)
            for c in rows if c.target is not None}


def cores_evidence(probe: ProbeResult) -> Dict[str, object]:
    """The cores a process may use, with why: usable cores, affinity, cgroup quota."""
    affinity = probe.fact("cpu", "affinity") or []
    quota = probe.fact("cpu", "cgroup_cpu_quota")
    span = ("%d-%d" % (affinity[0], affinity[-1]) if len(affinity) > 1
            and affinity[-1] - affinity[0] == len(affinity) - 1
            else ",".join(str(a) for a in affinity))
    return {"usable cores": quantity(usable_cores(probe), "cores"),
            "CPU affinity": span or "unknown",
            "cgroup CPU quota": quantity(quota, "CPUs") if quota else "none"}


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
    cpu_max = best_capability(target)
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
    evidence = {"best GEMM benchmark": bench_label(comparison),
                "best GEMM rate": quantity(comparison.target.value, "GFLOP/s"),
                "fraction of nominal peak": quantity(best, "fraction"),
                "nominal peak": peak.basis,
                "bounds": lower_limits(PEAK_ERROR, PEAK_WARNING)}
    return grade_low(best, PEAK_ERROR, PEAK_WARNING), evidence, best


__all__ = ["SOURCE_931", "PEAK_ERROR", "PEAK_WARNING", "GEMM_BENCHES", "ONEDNN_BENCHES",
           "VECTORISED_BENCHES", "bench_label", "ratio_value", "with_ratio", "gemm_rows",
           "family_ratio", "ratio_evidence", "rate_evidence", "cores_evidence", "Upstream",
           "upstream", "same_minor_version", "same_version_upstream", "grade_gemm_peak",
           "is_x86_64", "machine"]
