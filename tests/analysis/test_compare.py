"""Pairing of target and reference results, relative OPS, significance, thread scaling."""

import pytest

from eb_torchperf.analysis.compare import (AA_FLOOR, compare, compare_pair, geomean_relative_ops,
                                  rate_of, thread_scaling)
from eb_torchperf.records.measurements import AuditResult, BenchResult


def result(side, blocks, pair=0, bench="matmul_fp32", params=None, work=2.0 * 512 ** 3,
           unit="flop"):
    return BenchResult(bench=bench, params=params or {"n": 512}, side=side, pair=pair,
                       number_per_run=1, blocks_s=tuple(tuple(b) for b in blocks),
                       work=work, work_unit=unit)


def test_rate_units():
    gemm = rate_of([result("target", [[0.001, 0.001]])])
    assert gemm.value == pytest.approx(2.0 * 512 ** 3 / 0.001 / 1e9) and gemm.unit == "GFLOP/s"
    op = rate_of([result("target", [[2e-6]], bench="dispatch", params={}, work=1.0, unit="op")])
    assert op.value == pytest.approx(2.0) and op.unit == "µs/op"


def test_slow_target_is_significant():
    target = [result("target", [[0.010], [0.011], [0.010], [0.0105]])]
    reference = [result("reference", [[0.001], [0.001], [0.0011], [0.001]])]
    c = compare_pair(target, reference)
    assert c.relative_ops == pytest.approx(0.0975, rel=0.03)
    assert c.ci_low < c.relative_ops < c.ci_high
    assert c.significant and c.rounds == 4


def test_difference_below_aa_floor_is_not_significant():
    # a steady 3 % difference in two pairs: interval excludes 1.0 but the floor is 5 %
    target = [result("target", [[1.03], [1.03], [1.0301], [1.0299]], pair=p) for p in (0, 1)]
    reference = [result("reference", [[1.0], [1.0], [1.0], [1.0]], pair=p) for p in (0, 1)]
    c = compare_pair(target, reference)
    assert c.ci_high < 1.0 and c.relative_ops > 1 - AA_FLOOR
    assert not c.significant


def test_disagreeing_pairs_make_a_row_inconclusive_not_noisy():
    # pairs at 1.0 and 1/1.2: over 2 pairs the interval spans far more than ±10 %
    target = [result("target", [[1.0], [1.0]], pair=0), result("target", [[1.2], [1.2]], pair=1)]
    reference = [result("reference", [[1.0], [1.0]], pair=0),
                 result("reference", [[1.0], [1.0]], pair=1)]
    c = compare_pair(target, reference)
    assert c.pair_ratios == pytest.approx((1.0, 1 / 1.2))
    assert c.rounds == 4 and c.pairs == 2 and not c.noisy
    assert c.inconclusive and c.relative_ops is None and not c.significant
    assert c.estimate == pytest.approx((1 / 1.2) ** 0.5)
    assert c.ci_low < 0.5 and c.ci_high > 1.5
    assert geomean_relative_ops([c]) is None


def _three_pairs(target_s, spread):
    """Three pairs whose target times are target_s * (1 - spread, 1, 1 + spread)."""
    target = [result("target", [[target_s * f], [target_s * f * 1.001]], pair=i)
              for i, f in enumerate((1 - spread, 1.0, 1 + spread))]
    reference = [result("reference", [[1.0], [1.0]], pair=i) for i in range(3)]
    return compare_pair(target, reference)


def test_a_wide_interval_far_below_the_floor_band_stays_significant():
    # Debian reference BLAS vs the wheel: ~3 %, pairs 2.4-3.9 %: ±25 % wide in log
    # terms, but the whole interval is far below 95 %: a real gap is never hidden.
    c = _three_pairs(33.0, 0.25)
    assert c.ci_high < 0.10 and c.ci_high / c.ci_low > 1.5
    assert not c.inconclusive and c.significant
    assert c.relative_ops == pytest.approx(0.030, rel=0.05)


def test_inconclusive_boundary_is_the_floor_band():
    # centred at 1.3 with pairs ±12 %: the interval reaches below 105 % -> inconclusive
    wide = _three_pairs(1 / 1.3, 0.12)
    assert wide.ci_low < 1 + AA_FLOOR < wide.ci_high and wide.inconclusive
    assert not wide.significant and wide.relative_ops is None
    # the same spread centred at 2.0 excludes the band -> a number and a finding
    far = _three_pairs(0.5, 0.08)
    assert far.ci_low > 1 + AA_FLOOR and not far.inconclusive and far.significant
    # narrow around 1.0 (pairs ±1 %): conclusive, not significant
    near = _three_pairs(1.0, 0.01)
    assert not near.inconclusive and not near.significant
    assert near.relative_ops == pytest.approx(1.0, abs=0.01)


def test_target_alone_has_no_ratio():
    c = compare_pair([result("target", [[1.0]])], [])
    assert c.relative_ops is None and c.reference is None and c.target.samples == 1


def test_compare_groups_by_bench_and_params():
    results = (result("target", [[2.0]]), result("reference", [[1.0]]),
               result("target", [[1.0]], params={"n": 1024}),
               result("reference", [[1.0]], params={"n": 1024}))
    audit = AuditResult(suite="quick", options={}, target=None, reference=None, results=results)
    comparisons = compare(audit)
    assert [c.params for c in comparisons] == [{"n": 512}, {"n": 1024}]
    assert [c.relative_ops for c in comparisons] == pytest.approx([0.5, 1.0])
    assert geomean_relative_ops(comparisons) == pytest.approx(0.5 ** 0.5)


def test_thread_scaling():
    results = (result("target", [[2.0]], bench="thread_scaling", params={"n": 512, "threads": 1}),
               result("target", [[1.0]], bench="thread_scaling",
                      params={"n": 512, "threads": "all"}))
    audit = AuditResult(suite="quick", options={}, target=None, reference=None, results=results)
    assert thread_scaling(compare(audit)) == pytest.approx(2.0)
    assert thread_scaling(compare(audit), "reference") is None
