"""Rows measured under contention, the between-process spread and the smallest loss seen."""

import math

import pytest

from eb_torchperf.analysis import precision, stats
from eb_torchperf.analysis.compare import compare_pair
from eb_torchperf.records.measurements import BenchResult


def result(side, blocks, pair, load=None):
    return BenchResult(bench="matmul_fp32", params={"n": 512}, side=side, pair=pair,
                       number_per_run=1, blocks_s=tuple(tuple(b) for b in blocks),
                       work=2.0 * 512 ** 3, work_unit="flop", contention=load or {})


def pairs(ratio, n, load=None):
    """n pairs where the target takes 1/ratio of the reference's time."""
    target = [result("target", [[1.0 / ratio]] * 3, p, load) for p in range(n)]
    reference = [result("reference", [[1.0 + 0.001 * p]] * 3, p, load) for p in range(n)]
    return target, reference


def test_a_contended_row_is_never_significant():
    # the 1-core wheel read 185 % of the free wheel on a busy 2-core VM (issue 26)
    target, reference = pairs(1.85, 4, {"other_cpu": 0.6, "runq": 2.0})
    c = compare_pair(target, reference)
    assert c.contended and c.inconclusive and not c.significant
    assert c.relative_ops is None and c.estimate == pytest.approx(1.85, rel=0.01)
    assert c.contention["other_cpu"] == 0.6


def test_the_same_row_on_an_idle_host_decides():
    target, reference = pairs(1.85, 4, {"other_cpu": 0.01})
    c = compare_pair(target, reference)
    assert not c.contended and c.significant and c.relative_ops == pytest.approx(1.85, rel=0.01)


def test_one_contended_pair_of_many_does_not_mark_the_row():
    target, reference = pairs(1.0, 5, {"other_cpu": 0.0})
    target[0] = result("target", [[1.0]] * 3, 0, {"other_cpu": 0.9})
    assert not compare_pair(target, reference).contended


def test_each_side_is_judged_on_its_own_tick_noise():
    """Two busy loops on the 2-core VM, the wheel on core 0 against the free wheel
    (LayerNorm, 2026-12-04): the 1-CPU target's counters are coarse (±37 %), the 2-CPU
    reference's finer (±23 %) and busy; merged key by key they read 47 % ± 37 %."""
    target = [result("target", [[1.0 / 1.61]] * 3, p,
                     {"other_cpu": 0.2, "tick_noise": 0.37}) for p in range(9)]
    reference = [result("reference", [[1.0]] * 3, p,
                        {"other_cpu": 0.47, "tick_noise": 0.23}) for p in range(9)]
    c = compare_pair(target, reference)
    assert c.contended and c.relative_ops is None and not c.significant
    # the same target beside an idle reference decides
    idle = [result("reference", [[1.0]] * 3, p, {"other_cpu": 0.02, "tick_noise": 0.23})
            for p in range(9)]
    assert compare_pair(target, idle).significant


def test_spread_and_min_detectable():
    assert stats.pair_spread([1.0]) is None
    spread = stats.pair_spread([0.8, 1.0, 1.25])
    assert spread == pytest.approx(math.exp(math.log(1.25)) - 1, rel=1e-6)
    # a ±25 % interval at a 5 % floor sees losses above 1 - 1/(1.25 x 1.05)
    assert precision.min_detectable(0.8, 1.25, 0.05) == pytest.approx(1 - 1 / (1.25 * 1.05))
    assert precision.min_detectable(None, 1.2, 0.05) is None


def test_pairs_for_narrows_with_the_spread():
    few, many = stats.pairs_for(0.05, 0.05), stats.pairs_for(0.25, 0.05)
    assert 2 <= few < many
    n = many
    assert stats.t_quantile_975(n - 1) * math.log(1.25) / math.sqrt(n) <= math.log(1.05)
    assert stats.t_quantile_975(n - 2) * math.log(1.25) / math.sqrt(n - 1) > math.log(1.05)
