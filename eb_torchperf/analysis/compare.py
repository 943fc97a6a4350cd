"""Pair target and reference results and compute relative OPS with intervals.

Relative OPS = reference seconds per call / target seconds per call (reference =
100 %), as in the TorchBench tables of https://github.com/easybuilders/easybuild/issues/931.
"""

import collections
import dataclasses
import math
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from eb_torchperf.analysis import numerics as numerics_mod
from eb_torchperf.analysis import precision, stats
from eb_torchperf.measure import contention as busy
from eb_torchperf.records.measurements import AuditResult, BenchResult
from eb_torchperf.probe.registry import WORK_UNITS

#: Smallest relative-OPS difference this tool claims, whatever the within-run interval:
#: two processes of the same wheel differ by a steady 1-8 % that more rounds do not
#: remove (measured on the 2-core dev machine; one pair at 40 s stayed within 5 % in
#: 15 of 18 A/A runs).  The A/A check in tests/ holds the suite to this floor.
AA_FLOOR = 0.05
#: A sample set whose IQR exceeds this fraction of its median is flagged noisy (only
#: where a row has no interval to read instead: runs.unpaired_comparisons).
NOISY_REL_IQR = 0.10


@dataclasses.dataclass(frozen=True)
class Rate:
    """Throughput of one side for one benchmark.

    Attributes:
        median_s: median seconds per call over all samples.
        value: rate in `unit` (GFLOP/s, GB/s, or µs/op where lower is better).
        unit: display unit from WORK_UNITS.
        samples: number of samples; rel_iqr: IQR / median of the samples.
        extra_s: extra metric -> median seconds per call (BenchResult.extra_s pooled),
            e.g. {"cpu_s": ..., "gpu_s": ...} for CUDA dispatch benchmarks.
        best_s: fastest sample's seconds per call (None if not known).  On a GPU at
            its power cap this is the burst rate (a bf16 8192^3 GEMM on the H200:
            785 TFLOP/s best sample, 708 median, reports/examples/h200-gpu-suite.md).
        kernels: the ATen kernels that held one call's time on this side
            (BenchResult.kernels), e.g. ("aten::mkldnn_convolution",); empty where the
            row does not record them.
    """

    median_s: float
    value: float
    unit: str
    samples: int
    rel_iqr: float
    extra_s: Dict[str, float] = dataclasses.field(default_factory=dict)
    best_s: Optional[float] = None
    kernels: Tuple[str, ...] = ()

    @property
    def best_value(self) -> Optional[float]:
        """The rate of the fastest sample, in `unit` (None where best_s is unknown)."""
        if self.best_s is None:
            return None
        return self.value * (self.best_s / self.median_s if self.unit == "µs/op"
                             else self.median_s / self.best_s)


def rate_of(results: Sequence[BenchResult]) -> Rate:
    """Pool the samples of one side (all pairs) into a Rate.

    Raises:
        ValueError: no results.
    """
    if not results:
        raise ValueError("no results to pool")
    times = [t for r in results for t in r.times_s]
    med = stats.median(times)
    unit = WORK_UNITS[results[0].work_unit]
    if results[0].work_unit == "op":
        value = med / results[0].work * 1e6
    else:
        value = results[0].work / med / 1e9
    metrics = sorted({m for r in results for m in r.extra_s})
    extra = {m: stats.median([t for r in results for t in r.extra_times_s(m)]) for m in metrics}
    kernels = next((r.kernels for r in results if r.kernels), ())
    return Rate(med, value, unit, len(times), stats.relative_iqr(times), extra, min(times),
                kernels)


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One benchmark, target vs reference (or target alone).

    Attributes:
        bench, params: what was measured.
        target, reference: Rate of each side (reference None when not measured).
        relative_ops: reference time / target time (1.0 = equal); None without reference.
        ci_low, ci_high: 95 % interval of relative_ops over worker pairs, never narrower
            than the within-run one, and with one pair widened by the A/A floor (the
            processes' own difference is then unmeasured: stats.two_level_ratio_with_ci);
            None if < 2 rounds.
        rounds: paired rounds pooled; pair_ratios: relative OPS per worker pair.
        significant: the interval excludes 1.0 and the difference exceeds the A/A floor
            (never for an inconclusive row).
        noisy: only for comparisons without an interval (runs.unpaired_comparisons): a
            side's relative IQR exceeds NOISY_REL_IQR.  Paired rows read their interval.
        pairs: worker pairs measured on both sides.
        inconclusive: the interval stayed wider than precision.INCONCLUSIVE_HALF_WIDTH,
            or its centre lies outside the A/A floor band while the interval reaches into
            it, without excluding the band (precision.is_inconclusive).  Then
            relative_ops is None (so no rule, finding or geometric mean uses it) and
            `estimate` keeps the number; ci_low/ci_high show why.
        estimate: the ratio estimate, also for an inconclusive row (None without one).
        contended: measured under contention (measure.contention.contended over the
            median pair's load): never significant on its own strength; the row is
            also inconclusive (no relative_ops, no finding), its estimate kept.
        spread: between-process spread of the pair ratios (standard deviation of their
            logs, as a fraction: 0.25 = ±25 %); None with fewer than two pairs.
        min_detectable: the smallest loss (fraction) this row could have shown as a
            significant finding: its interval half-width plus the A/A floor (None
            without an interval).
        contention: the row's load, key by key the median over its pairs of the
            worse side (BenchResult.contention keys); {} when not measured.
        numerics: the two sides' numerical errors and their state
            (analysis.numerics.assess: {"target", "reference", "bound", "state", ...});
            None where the row has no numerics.
    """

    bench: str
    params: Dict[str, object]
    target: Optional[Rate]
    reference: Optional[Rate]
    relative_ops: Optional[float] = None
    ci_low: Optional[float] = None
    ci_high: Optional[float] = None
    rounds: int = 0
    pair_ratios: Tuple[float, ...] = ()
    significant: bool = False
    noisy: bool = False
    pairs: int = 0
    inconclusive: bool = False
    estimate: Optional[float] = None
    contended: bool = False
    spread: Optional[float] = None
    min_detectable: Optional[float] = None
    contention: Dict[str, float] = dataclasses.field(default_factory=dict)
    numerics: Optional[dict] = None


def _group(results: Sequence[BenchResult]) -> Dict[tuple, Dict[str, List[BenchResult]]]:
    groups: Dict[tuple, Dict[str, List[BenchResult]]] = collections.OrderedDict()
    for result in results:
        groups.setdefault(result.key, {"target": [], "reference": []})[result.side].append(result)
    return groups


def _paired(target: List[BenchResult], reference: List[BenchResult]) -> List[tuple]:
    """Per-round log ratios, one tuple per pair measured on both sides."""
    by_pair = {r.pair: r for r in reference}
    groups = []
    for t in target:
        r = by_pair.get(t.pair)
        if r is None:
            continue
        rounds = min(len(t.blocks_s), len(r.blocks_s))
        groups.append(stats.paired_log_ratios(t.blocks_s[:rounds], r.blocks_s[:rounds]))
    return groups


def compare_pair(target: List[BenchResult], reference: List[BenchResult],
                 aa_floor: float = AA_FLOOR,
                 inconclusive_half_width: float = precision.INCONCLUSIVE_HALF_WIDTH
                 ) -> Comparison:
    """Compare the results of one benchmark key (lists may be empty on one side)."""
    first = (target or reference)[0]
    t_rate = rate_of(target) if target else None
    r_rate = rate_of(reference) if reference else None
    groups = [g for g in _paired(target, reference) if g]
    numerics = numerics_mod.assess(numerics_mod.side_numerics(target),
                                   numerics_mod.side_numerics(reference))
    if not groups:
        return Comparison(first.bench, first.params, t_rate, r_rate, numerics=numerics)
    ratio, low, high = stats.two_level_ratio_with_ci(groups, one_pair_allowance=aa_floor)
    pair_ratios = [math.exp(stats.pair_location(g)) for g in groups]
    load = row_contention(target, reference)
    contended = row_contended(target, reference)
    inconclusive = contended or precision.is_inconclusive(low, high, aa_floor,
                                                          inconclusive_half_width)
    outside = low is not None and (high < 1.0 or low > 1.0)
    significant = (not inconclusive and outside
                   and abs(math.log(ratio)) > math.log(1 + aa_floor))
    return Comparison(first.bench, first.params, t_rate, r_rate,
                      None if inconclusive else ratio, low, high,
                      sum(len(g) for g in groups), tuple(pair_ratios), significant, False,
                      len(groups), inconclusive, ratio, contended,
                      stats.pair_spread(pair_ratios),
                      precision.min_detectable(low, high, aa_floor), load,
                      numerics)


def row_contention(target: List[BenchResult], reference: List[BenchResult]) -> Dict[str, float]:
    """A row's load: per pair the worse side key by key, then the median over pairs
    (one contended pair of many does not mark the row); {} when not measured."""
    by_pair: Dict[int, List[Dict[str, float]]] = {}
    for r in list(target) + list(reference):
        if r.contention:
            by_pair.setdefault(r.pair, []).append(r.contention)
    worst = [busy.worst(loads) for loads in by_pair.values()]
    keys = sorted({k for w in worst for k in w})
    return {k: round(statistics.median(w[k] for w in worst if k in w), 4) for k in keys}


def row_contended(target: List[BenchResult], reference: List[BenchResult]) -> bool:
    """True when in at least half of a row's pairs a side was measured under contention,
    each result judged on its own load and tick noise (measure.contention.contended).
    Merging the sides first paired a 2-CPU reference's load with a 1-CPU target's tick
    noise: under two busy loops on the 2-core VM the reference's LayerNorm results read
    other processes at 30-55 % of its CPUs (8 of 9 contended), the merge read 47 % ± 37 %,
    not contended, and the core-0 target's row read 161 % [120-217 %], significant."""
    by_pair: Dict[int, bool] = {}
    for r in list(target) + list(reference):
        if r.contention:
            by_pair[r.pair] = by_pair.get(r.pair, False) or busy.contended(r.contention)
    return bool(by_pair) and 2 * sum(by_pair.values()) >= len(by_pair)


def needs_more_pairs(target: List[BenchResult], reference: List[BenchResult],
                     target_half_width: float = precision.ADAPTIVE_HALF_WIDTH,
                     aa_floor: float = AA_FLOOR) -> Optional[Tuple[int, float]]:
    """The `judge` of measure.interleave.AuditRun (adaptive pairs): None for a decided
    row, else its rank for the next extra pair, (0 or 1, log interval half-width).
    Rank 0, whose verdict is at stake: still inconclusive, or significant without
    clearing the A/A floor band by its half-width (an A/A conv3x3 row read 92.8 %
    [88.3-97.5 %] over 6 pairs on the 2-core VM, 2026-12-03).  Rank 1: decided within
    the band, only wider than ±target_half_width (precision.needs_more).  The narrowest
    first within each (measure.extra_pairs)."""
    c = compare_pair(target, reference, aa_floor)
    half = precision.needs_more(c.ci_low, c.ci_high, aa_floor, target_half_width)
    if half is None:
        return None
    return (0 if c.inconclusive or c.significant else 1, half)


def compare(result: AuditResult, aa_floor: float = AA_FLOOR) -> List[Comparison]:
    """One Comparison per benchmark key of `result`, in measurement order."""
    return [compare_pair(sides["target"], sides["reference"], aa_floor)
            for sides in _group(result.results).values()]


def geomean_relative_ops(comparisons: Sequence[Comparison]) -> Optional[float]:
    """Geometric mean of relative OPS over comparisons that have one (TorchBench TOTAL);
    inconclusive rows have none (relative_ops None) and are left out."""
    values = [c.relative_ops for c in comparisons if c.relative_ops is not None]
    return stats.geometric_mean(values) if values else None


def thread_scaling(comparisons: Sequence[Comparison], side: str = "target") -> Optional[float]:
    """Speed-up of the `thread_scaling` GEMM from 1 thread to all allowed cores.

    Returns:
        time at 1 thread / time at all cores for `side`, None if not measured.
    """
    times = {}
    for c in comparisons:
        rate = getattr(c, side)
        if c.bench == "thread_scaling" and rate is not None:
            times[c.params.get("threads")] = rate.median_s
    if 1 in times and "all" in times:
        return times[1] / times["all"]
    return None
