"""Pure statistics: medians, IQR, paired ratios and their interval."""

import math

import pytest

from eb_torchperf.analysis import stats


def test_median_and_iqr():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 2.0
    assert stats.iqr([7.0]) == 0.0
    assert stats.relative_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2.0 / 3.0)


def test_median_empty():
    with pytest.raises(ValueError, match="empty"):
        stats.median([])


def test_paired_log_ratios():
    target = [[2.0, 2.0], [4.0]]
    reference = [[1.0], [1.0, 1.0, 1.0]]
    assert stats.paired_log_ratios(target, reference) == pytest.approx(
        (math.log(0.5), math.log(0.25)))


def test_paired_log_ratios_unequal_rounds():
    with pytest.raises(ValueError, match="2 target vs 1 reference"):
        stats.paired_log_ratios([[1.0], [1.0]], [[1.0]])


def test_ratio_with_ci_known_values():
    logs = [math.log(0.5)] * 4
    ratio, low, high = stats.ratio_with_ci(logs)
    assert (ratio, low, high) == pytest.approx((0.5, 0.5, 0.5))
    ratio, low, high = stats.ratio_with_ci([0.0, 0.2])
    half = 12.706 * statistics_stdev([0.0, 0.2]) / math.sqrt(2)
    assert ratio == pytest.approx(math.exp(0.1))
    assert low == pytest.approx(math.exp(0.1 - half)) and high == pytest.approx(math.exp(0.1 + half))


def statistics_stdev(values):
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def test_ratio_with_one_round_has_no_interval():
    assert stats.ratio_with_ci([math.log(2.0)]) == (pytest.approx(2.0), None, None)


def test_t_quantiles():
    assert stats.t_quantile_975(1) == 12.706
    assert stats.t_quantile_975(30) == 2.042
    assert stats.t_quantile_975(200) == 1.96
    with pytest.raises(ValueError):
        stats.t_quantile_975(0)


def test_geometric_mean():
    assert stats.geometric_mean([0.25, 1.0, 4.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stats.geometric_mean([1.0, 0.0])


def test_two_level_one_pair_is_the_within_run_interval():
    logs = [0.0, 0.2, 0.1]
    assert stats.two_level_ratio_with_ci([logs]) == pytest.approx(stats.ratio_with_ci(logs))


def test_two_level_pairs_weigh_equally_and_widen_the_interval():
    # two processes each steady within themselves but 10 % apart (log 0.2 vs 0.3)
    pairs = [[0.2, 0.2001, 0.1999, 0.2], [0.3, 0.3001, 0.2999]]
    ratio, low, high = stats.two_level_ratio_with_ci(pairs)
    assert ratio == pytest.approx(math.exp(0.25))
    half = 12.706 * statistics_stdev([0.2, 0.3]) / math.sqrt(2)
    assert (low, high) == pytest.approx((math.exp(0.25 - half), math.exp(0.25 + half)))
    assert low < 1.0 < high  # an A/A-like pair effect is not evidence


def test_two_level_never_narrower_than_within():
    pairs = [[-1.0, 1.0], [-1.0, 1.0]]  # equal pair means, wide rounds
    _, low, high = stats.two_level_ratio_with_ci(pairs)
    _, w_low, w_high = stats.ratio_with_ci([-1.0, 1.0, -1.0, 1.0])
    assert (low, high) == pytest.approx((w_low, w_high))


def test_two_level_needs_rounds():
    with pytest.raises(ValueError, match="no paired rounds"):
        stats.two_level_ratio_with_ci([[], []])
