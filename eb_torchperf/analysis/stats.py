"""Small pure statistics over sequences of timings (no I/O, no formatting).

The ratio estimate works on paired rounds: the runner measures target and reference
alternately (A B B A ...), so each round gives one log time-ratio in which slow drift
of the machine cancels.  Relative OPS = reference time / target time (reference =
1.0), i.e. the target's throughput as a fraction of the reference's, the convention
of the TorchBench tables in https://github.com/easybuilders/easybuild/issues/931.
"""

import math
import statistics
from typing import Optional, Sequence, Tuple

#: Two-sided 95 % Student-t quantiles by degrees of freedom (1..30); 1.96 beyond.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence.

    Raises:
        ValueError: empty sequence.
    """
    if not values:
        raise ValueError("median of an empty sequence")
    return statistics.median(values)


def iqr(values: Sequence[float]) -> float:
    """Inter-quartile range (Q3 - Q1, "inclusive" quartiles); 0.0 for one value."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def relative_iqr(values: Sequence[float]) -> float:
    """IQR divided by the median: the noise of one sample set (0.05 = 5 %)."""
    return iqr(values) / median(values)


def t_quantile_975(dof: int) -> float:
    """Two-sided 95 % Student-t quantile for `dof` degrees of freedom (>= 1)."""
    if dof < 1:
        raise ValueError("degrees of freedom must be >= 1")
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


def paired_log_ratios(target_blocks: Sequence[Sequence[float]],
                      reference_blocks: Sequence[Sequence[float]]) -> Tuple[float, ...]:
    """log(median reference block / median target block), one value per round.

    Args:
        target_blocks, reference_blocks: one sequence of seconds-per-call samples per
            round; round i of one side is paired with round i of the other.

    Raises:
        ValueError: the two sides have a different number of rounds.
    """
    if len(target_blocks) != len(reference_blocks):
        raise ValueError("paired rounds differ in number: %d target vs %d reference"
                         % (len(target_blocks), len(reference_blocks)))
    return tuple(math.log(median(r) / median(t))
                 for t, r in zip(target_blocks, reference_blocks))


def ratio_with_ci(log_ratios: Sequence[float]) -> Tuple[float, Optional[float], Optional[float]]:
    """Geometric-mean ratio and its 95 % confidence interval from paired log ratios.

    Method: Student-t interval on the mean of the per-round log ratios, exponentiated
    (assumes rounds are independent and log ratios roughly normal).  This is the
    within-run interval only; the caller compares it with the A/A floor.

    Returns:
        (ratio, low, high); low/high are None with fewer than two rounds.

    Raises:
        ValueError: no rounds.
    """
    if not log_ratios:
        raise ValueError("no paired rounds")
    mean = statistics.fmean(log_ratios)
    if len(log_ratios) < 2:
        return math.exp(mean), None, None
    half = t_quantile_975(len(log_ratios) - 1) * statistics.stdev(log_ratios) / math.sqrt(len(log_ratios))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


#: Scale factor from the median absolute deviation to the standard deviation of a
#: normal distribution (1 / Phi^-1(3/4)).
MAD_TO_SD = 1.4826


def robust_sd(residuals: Sequence[float]) -> float:
    """MAD_TO_SD x the median absolute residual: a spread that a few outlier rounds do
    not inflate (0.0 for fewer than two values)."""
    if len(residuals) < 2:
        return 0.0
    return MAD_TO_SD * statistics.median(abs(r) for r in residuals)


def pair_location(log_ratios: Sequence[float]) -> float:
    """One worker pair's log ratio: the median of its rounds (see
    two_level_ratio_with_ci).

    Raises:
        statistics.StatisticsError: no rounds.
    """
    return statistics.median(log_ratios)


#: Huber's tuning constant: weights fall off past 1.345 robust standard deviations, 95 %
#: efficiency at the normal distribution (Huber and Ronchetti, "Robust Statistics",
#: 2nd ed., 2009, section 4.6; Wilcox, "Introduction to Robust Estimation and
#: Hypothesis Testing", 4th ed., section 3.5).
HUBER_K = 1.345
#: Pairs from which the location is Huber's; below, the plain mean.
HUBER_MIN_PAIRS = 5


def huber_location_with_se(values: Sequence[float]) -> Tuple[float, Optional[float], int]:
    """Huber M-estimate of the location of `values`, its standard error and degrees of
    freedom: (location, se, dof); the plain mean, s / sqrt(n) and n - 1 below
    HUBER_MIN_PAIRS values or where the robust spread is 0.  se is None (dof 0) with
    fewer than two values.

    Method: the scale s is robust_sd around the median and stays fixed; the location is
    found by iterated reweighting (weight 1 within HUBER_K x s, HUBER_K x s / |r|
    beyond); se^2 = s^2 mean(psi^2) / mean(psi')^2 / n, the usual sandwich (Huber and
    Ronchetti section 6.2), with a Student-t quantile at n - 1 degrees of freedom.

    Why: between fresh processes the spread is heavy-tailed.  1093 A/A pair ratios of
    CPU rows on the H200 host (13 audits, 2026-12-03/04) had a standard deviation of
    0.20 (log scale) and a robust one of 0.05; a 20 % trimmed mean (Yuen) left 68 of 312
    rows inconclusive, this 54, and the interval missed 1.0 in 7 of 312 (2.2 %; 19 of
    304 on the 2-core VM): no more than the 5 % a 95 % interval may.

    Raises:
        ValueError: no values.
    """
    n = len(values)
    if n == 0:
        raise ValueError("location of an empty sequence")
    middle = statistics.median(values)
    scale = robust_sd([v - middle for v in values])
    if n < HUBER_MIN_PAIRS or scale <= 0:
        if n < 2:
            return statistics.fmean(values), None, 0
        return statistics.fmean(values), statistics.stdev(values) / math.sqrt(n), n - 1
    location = middle
    for _ in range(100):
        weights = [min(1.0, HUBER_K * scale / max(abs(v - location), 1e-300)) for v in values]
        moved = sum(w * v for w, v in zip(weights, values)) / sum(weights)
        done, location = abs(moved - location) <= 1e-9 * scale, moved
        if done:
            break
    z = [(v - location) / scale for v in values]
    psi = [max(-HUBER_K, min(HUBER_K, u)) for u in z]
    inside = max(sum(abs(u) <= HUBER_K for u in z), 1) / n
    se = scale * math.sqrt(sum(p * p for p in psi) / n) / inside / math.sqrt(n)
    return location, se, n - 1


def two_level_ratio_with_ci(rounds_per_pair: Sequence[Sequence[float]],
                            one_pair_allowance: float = 0.0
                            ) -> Tuple[float, Optional[float], Optional[float]]:
    """Ratio and 95 % interval from paired log ratios grouped by worker pair.

    Two processes of the same build can differ by a steady amount that more rounds do
    not remove, so rounds within one pair are not independent evidence about the
    builds; and on a shared VM a round now and then lands on a slower moment of the
    host for one side only (dispatch: 1.2 µs per op, with single blocks at 1.9-2.2 µs
    on the 2-core dev VM, issue 16), an outlier that a mean would carry.  Now and then
    a whole pair is such an outlier (a fresh process at 30 % of its siblings, H200
    host, issue 26), so pairs are pooled robustly too.
    Method:
    - each pair's location is the median of its per-round log ratios;
    - the ratio is the Huber M-estimate of those (huber_location_with_se; the plain
      mean below 5 pairs);
    - the interval is the larger of its Student-t interval over the pair locations
      and the within-run interval: Student-t with n_rounds - n_pairs degrees of
      freedom on the robust spread (robust_sd) of the rounds around their pair's
      location;
    - with one pair the difference between processes is not measured at all: the
      within-run interval is widened by `one_pair_allowance` on each side (log(1 + a)
      added to its half-width: a bound on a steady error, added, not in quadrature).
      An A/A audit of one pair in CI read 90 % [88-91 %] on the 2-core VM (2026-12-03):
      its rounds agreed, its two processes did not.  None with fewer than two rounds,
      or without any spread estimate.

    Args:
        rounds_per_pair: for each pair, its per-round log ratios (paired_log_ratios).
        one_pair_allowance: the steady difference (fraction) two processes of one build
            may show, applied only when there is one pair (compare.AA_FLOOR).

    Returns:
        (ratio, low, high); low/high None when no interval can be given.

    Raises:
        ValueError: no pair has rounds.
    """
    groups = [list(g) for g in rounds_per_pair if g]
    if not groups:
        raise ValueError("no paired rounds")
    centres = [pair_location(g) for g in groups]
    centre, se, dof = huber_location_with_se(centres)
    residuals = [v - c for g, c in zip(groups, centres) for v in g]
    rounds = len(residuals)
    halves = []
    if rounds - len(groups) >= 1:
        halves.append(t_quantile_975(rounds - len(groups)) * robust_sd(residuals)
                      / math.sqrt(rounds))
    if se is not None:
        halves.append(t_quantile_975(dof) * se)
    if not halves:
        return math.exp(centre), None, None
    half = max(halves) + (math.log1p(one_pair_allowance) if len(groups) == 1 else 0.0)
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def pair_spread(pair_ratios: Sequence[float]) -> Optional[float]:
    """Between-process spread of per-pair ratios: the standard deviation of their logs,
    as a fraction (exp(sd) - 1: 0.25 reads "±25 %"); None with fewer than two pairs."""
    if len(pair_ratios) < 2:
        return None
    return math.exp(statistics.stdev(math.log(r) for r in pair_ratios)) - 1.0


def pairs_for(spread: float, half_width: float) -> int:
    """Pairs needed for a Student-t 95 % interval over pair ratios of this `spread`
    (fraction) to narrow to ±`half_width` (fraction): the smallest n with
    t(n-1) x ln(1+spread) / sqrt(n) <= ln(1+half_width); 2 at least, 1000 at most."""
    sd, target = math.log1p(spread), math.log1p(half_width)
    for n in range(2, 1001):
        if t_quantile_975(n - 1) * sd / math.sqrt(n) <= target:
            return n
    return 1000


def geometric_mean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (the TorchBench "--TOTAL--" row).

    Raises:
        ValueError: empty sequence or a value <= 0.
    """
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(statistics.fmean(math.log(v) for v in values))
