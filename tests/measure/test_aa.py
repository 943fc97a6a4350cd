"""A/A check: the wheel audited against itself claims no difference.

With the same interpreter on both sides no row may be significant (the interval over
worker pairs must include 100 % or the difference must stay under the A/A floor), and
the geometric mean over the rows must stay within the floor: a systematic bias of the
runner (a missing warm-up, a side that always runs second) would move every row the
same way.  Single rows are not held to the floor: fresh processes of one wheel differ
by up to ~20 % on some rows on this 2-core VM (benchmarks/aa_repeat.py prints it).
"""

import dataclasses

import pytest

from eb_torchperf.measure.interleave import SUITE_OPTIONS, AuditRun
from eb_torchperf.analysis.compare import (AA_FLOOR, compare, geomean_relative_ops,
                                           needs_more_pairs)
from eb_torchperf.analysis.stats import geometric_mean


def _aa_audit(wheel_python, only):
    options = dataclasses.replace(SUITE_OPTIONS["quick"], allow_same_torch=True)
    result = AuditRun(wheel_python, wheel_python, "quick", options, only=only,
                      judge=needs_more_pairs).run()
    comparisons = compare(result)
    assert result.complete and len(comparisons) == len(only)
    return comparisons


def test_wheel_against_itself(wheel_python):
    """One retry: a load spike from another process on a shared 2-core machine moved the
    geomean to 108 % once (CI's own run had the machine to itself); a systematic bias of
    the runner shows in both attempts.  The bias check uses every row's estimate, also
    of rows shown as inconclusive (under load all five can be: issue 16), except rows
    measured under contention (issue 26: the shared VM at load 10 read 92 %)."""
    only = ["matmul_fp32", "layernorm", "add_bandwidth", "dispatch", "conv3x3"]
    for _attempt in (1, 2):
        comparisons = _aa_audit(wheel_python, only)
        significant = [(c.bench, c.relative_ops, c.ci_low, c.ci_high, c.pair_ratios)
                       for c in comparisons if c.significant]
        # rows measured under contention decide nothing (issue 26): the runner's bias is
        # read from the quiet rows; a busy host's rows must all stay undecided
        quiet = [c.estimate for c in comparisons if not c.contended]
        bias = geometric_mean(quiet) if quiet else 1.0
        if not significant and abs(bias - 1.0) <= AA_FLOOR:
            break
    assert not significant, significant
    options = SUITE_OPTIONS["quick"]
    for c in comparisons:
        assert options.pairs <= len(c.pair_ratios) == c.pairs <= options.max_pairs
        assert c.inconclusive == (c.relative_ops is None)
        assert c.relative_ops is None or not c.contended
    assert bias == pytest.approx(1.0, abs=AA_FLOOR)
    geomean = geomean_relative_ops(comparisons)
    assert geomean is None or geomean == pytest.approx(1.0, abs=2 * AA_FLOOR)
