"""A/A check: the wheel audited against itself claims no difference.

The runner's claim is that a row marked significant is a real difference; with the
same interpreter on both sides no row may be significant, and every relative OPS must
stay near 100 % (AA_FLOOR is the tool's stated floor; the bound here is twice it so
that a shared CI machine does not make the test flaky, while a broken pairing or
ordering bias (e.g. a missing warm-up: up to 2x) still fails it).
"""

import pytest

from eb_torchperf.audit import SUITE_OPTIONS, AuditRun
from eb_torchperf.compare import AA_FLOOR, compare


def test_wheel_against_itself(wheel_python):
    only = ["matmul_fp32", "layernorm", "add_bandwidth", "dispatch"]
    result = AuditRun(wheel_python, wheel_python, "quick", SUITE_OPTIONS["quick"], only=only).run()
    comparisons = compare(result)
    assert result.complete and len(comparisons) == len(only)
    for c in comparisons:
        assert not c.significant, (c.bench, c.relative_ops, c.ci_low, c.ci_high)
        assert c.relative_ops == pytest.approx(1.0, abs=2 * AA_FLOOR), c.bench
