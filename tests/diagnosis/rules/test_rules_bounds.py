"""ReFrame-style bounds: limits, inclusiveness, validation messages, grading."""

import pytest

from eb_torchperf.diagnosis.bounds import (Bound, above, below, check_bound, describe, grade_low,
                                       lower_limits, within)


@pytest.mark.parametrize("bound, low, high", [
    # the worked table of the module docstring
    (Bound(1.0, -0.5, None, "x"), 0.5, None),
    (Bound(1.0, -0.1, None, "x"), 0.9, None),
    (Bound(1.0, None, 0.0, "x"), None, 1.0),
    (Bound(2.0, -0.4, 1.0, "x"), 1.2, 4.0),
])
def test_limits_of_the_worked_table(bound, low, high):
    assert bound.low == pytest.approx(low) if low is not None else bound.low is None
    assert bound.high == pytest.approx(high) if high is not None else bound.high is None


def test_limits_are_inclusive():
    bound = Bound(2.0, -0.5, 0.5, "x")  # [1.0, 3.0]
    assert within(1.0, bound) and within(3.0, bound)
    assert below(0.999, bound) and not below(1.0, bound)
    assert above(3.001, bound) and not above(3.0, bound)
    open_bound = Bound(1.0, None, None, "x")
    assert within(-1e9, open_bound) and within(1e9, open_bound)


@pytest.mark.parametrize("bound, message", [
    (Bound(0.0, -0.1, None, "x"), r"ref must be > 0"),
    (Bound(-1.0, -0.1, None, "x"), r"ref must be > 0"),
    (Bound(1.0, 0.1, None, "x"), r"lower_frac must be in \[-1, 0\]"),
    (Bound(1.0, -1.5, None, "x"), r"lower_frac must be in \[-1, 0\]"),
    (Bound(1.0, None, -0.1, "x"), r"upper_frac must be >= 0"),
])
def test_check_bound_rejects_bad_definitions(bound, message):
    with pytest.raises(ValueError, match=message):
        check_bound(bound)


def test_grade_low_at_each_limit():
    error, warning = Bound(1.0, -0.5, None, "r"), Bound(1.0, -0.1, None, "r")
    assert [grade_low(v, error, warning) for v in (0.49, 0.5, 0.89, 0.9, 1.5)] == [
        "error", "warning", "warning", "info", "info"]


def test_bound_descriptions():
    assert describe(Bound(1.0, -0.4, 0.0, "threads per core")) == "0.6–1 threads per core"
    assert describe(Bound(1.0, None, 1.0, "x")) == "open–2 x"
    assert lower_limits(Bound(1.0, -0.5, None, "r"), Bound(1.0, -0.1, None, "r")) == (
        "error below 0.5, warning below 0.9 r")
