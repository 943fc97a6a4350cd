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


def test_two_level_pairs_weigh_equally_and_widen_the_interval():
    # two processes each steady within themselves but 10 % apart (log 0.2 vs 0.3)
    pairs = [[0.2, 0.2001, 0.1999, 0.2], [0.3, 0.3001, 0.2999]]
    ratio, low, high = stats.two_level_ratio_with_ci(pairs)
    assert ratio == pytest.approx(math.exp(0.25))
    half = 12.706 * statistics_stdev([0.2, 0.3]) / math.sqrt(2)
    assert (low, high) == pytest.approx((math.exp(0.25 - half), math.exp(0.25 + half)))
    assert low < 1.0 < high  # an A/A-like pair effect is not evidence


def test_two_level_never_narrower_than_within():
    pairs = [[-1.0, 1.0, 0.0], [-1.0, 1.0, 0.0]]  # equal pair medians, wide rounds
    ratio, low, high = stats.two_level_ratio_with_ci(pairs)
    assert ratio == pytest.approx(1.0)
    # within: t(4) x 1.4826 x median |residual| (1.0) / sqrt(6)
    half = 2.776 * 1.4826 * 1.0 / math.sqrt(6)
    assert (low, high) == pytest.approx((math.exp(-half), math.exp(half)))


def test_two_level_needs_rounds():
    with pytest.raises(ValueError, match="no paired rounds"):
        stats.two_level_ratio_with_ci([[], []])


def test_two_level_uses_each_pairs_median_so_one_outlier_round_does_not_move_it():
    # one round of pair 0 landed on a slow moment of the host for one side (log 0.6)
    groups = [[0.0, 0.01, -0.01, 0.6, 0.0], [0.02, 0.0, 0.01, 0.02, 0.01]]
    ratio, low, high = stats.two_level_ratio_with_ci(groups)
    assert ratio == pytest.approx(math.exp((0.0 + 0.01) / 2))
    # between pairs: t(1) = 12.706 x sd(0.0, 0.01) / sqrt(2) = 0.0898; within: t(8) x
    # 1.4826 x median |residual| (0.01) / sqrt(10) = 0.0108: the larger one wins
    half = 12.706 * statistics_stdev([0.0, 0.01]) / math.sqrt(2)
    assert math.log(high / ratio) == pytest.approx(half)
    assert math.log(ratio / low) == pytest.approx(half)


def test_two_level_one_pair_gives_the_robust_within_interval():
    groups = [[0.0, 0.1, -0.1, 0.02, 2.0]]
    ratio, low, high = stats.two_level_ratio_with_ci(groups)
    assert ratio == pytest.approx(math.exp(0.02))
    residuals = sorted(abs(v - 0.02) for v in groups[0])  # 0, 0.02, 0.08, 0.12, 1.98
    half = 2.776 * 1.4826 * residuals[2] / math.sqrt(5)
    assert math.log(high / ratio) == pytest.approx(half)
    assert stats.two_level_ratio_with_ci([[0.3]]) == (pytest.approx(math.exp(0.3)), None, None)


def test_one_pair_is_widened_by_the_unmeasured_process_difference():
    # CI's one-pair A/A read 90 % [88-91 %]: steady rounds, two processes apart
    groups = [[math.log(0.90) + d for d in (0.0, 0.01, -0.01, 0.005, -0.005)]]
    ratio, bare_low, bare_high = stats.two_level_ratio_with_ci(groups)
    ratio2, low, high = stats.two_level_ratio_with_ci(groups, one_pair_allowance=0.05)
    assert ratio2 == pytest.approx(ratio) == pytest.approx(0.90)
    assert high == pytest.approx(bare_high * 1.05) and low == pytest.approx(bare_low / 1.05)
    assert high > 0.95  # no longer clear of the 5 % A/A band
    # two pairs measure the difference themselves: the allowance is not added
    two = [groups[0], [math.log(0.92)] * 5]
    assert (stats.two_level_ratio_with_ci(two, one_pair_allowance=0.05)
            == stats.two_level_ratio_with_ci(two))


def test_location_is_the_mean_below_five_pairs():
    centre, se, dof = stats.huber_location_with_se([0.1, 0.2, 0.6])
    assert centre == pytest.approx(0.3)
    assert se == pytest.approx(statistics_stdev([0.1, 0.2, 0.6]) / math.sqrt(3))
    assert dof == 2
    assert stats.huber_location_with_se([0.4]) == (pytest.approx(0.4), None, 0)
    with pytest.raises(ValueError):
        stats.huber_location_with_se([])


def test_huber_location_solves_its_estimating_equation_with_the_sandwich_error():
    values = [0.0, 0.01, -0.01, 0.02, -0.02, 0.005, -0.005, 0.015, 1.3, -0.9]
    centre, se, dof = stats.huber_location_with_se(values)
    middle = sorted(values)[4:6]
    median = sum(middle) / 2  # 0.0025
    residuals = sorted(abs(v - median) for v in values)
    scale = 1.4826 * (residuals[4] + residuals[5]) / 2
    k = 1.345
    psi = [max(-k, min(k, (v - centre) / scale)) for v in values]
    assert sum(psi) == pytest.approx(0.0, abs=1e-6)
    # the two far values are clipped (weight k s / |r|): the centre stays with the eight
    assert centre == pytest.approx(0.001875, abs=1e-6)
    inside = sum(abs((v - centre) / scale) <= k for v in values) / 10  # 8 of 10
    assert inside == 0.8
    assert se == pytest.approx(scale * math.sqrt(sum(p * p for p in psi) / 10) / 0.8
                               / math.sqrt(10))
    assert dof == 9


def test_two_stalled_pairs_of_seven_leave_the_row_decided():
    # gelu on the H200 host: 2 of 7 fresh processes at 0.41-0.46 (issue 26); a 20 %
    # trimmed mean trims one from each end and read 83 % [48-146 %]
    pairs = [[math.log(v)] * 3 for v in (1.0, 0.99, 1.02, 0.98, 1.01, 0.46, 0.41)]
    ratio, low, high = stats.two_level_ratio_with_ci(pairs)
    assert 0.97 < ratio < 1.0
    assert 0.94 < low < ratio < high < 1.03


def test_one_outlying_pair_does_not_move_the_row():
    # nine pairs within ±1 % and one fresh process at 30 % of its sibling (issue 26)
    pairs = [[v, v, v] for v in (0.0, 0.01, -0.01, 0.005, -0.005, 0.008, -0.008,
                                 0.002, -0.002)] + [[math.log(0.3)] * 3]
    ratio, low, high = stats.two_level_ratio_with_ci(pairs)
    assert ratio == pytest.approx(1.0, abs=0.005)
    assert 0.97 < low < 1.0 < high < 1.03
    # the plain mean would have read 89 % with an interval of about ±25 %
    plain = sum(p[0] for p in pairs) / len(pairs)
    assert math.exp(plain) < 0.9
