"""ReFrame-style bounds: `(ref, lower_frac, upper_frac, unit)`.

A value is within a bound when `ref * (1 + lower_frac) <= value <= ref * (1 +
upper_frac)`; a fraction of None leaves that side open.  This is the reference tuple
of ReFrame (`reframe/core/pipeline.py`, `reference` attribute;
https://reframe-hpc.readthedocs.io/en/stable/regression_test_api.html#reframe.core.pipeline.RegressionTest.reference),
limited to positive references, which is all relative OPS, fractions of peak and
thread counts need.

Worked bounds (ref 1.0 = the reference build's throughput):

==========================  ===========  ===========
bound                       lower limit  upper limit
==========================  ===========  ===========
(1.0, -0.5, None, "x")      0.5          open
(1.0, -0.1, None, "x")      0.9          open
(1.0, None, 0.0, "x")       open         1.0
(2.0, -0.4, 1.0, "x")       1.2          4.0
==========================  ===========  ===========

Both limits are inclusive: exactly 0.5 is within (1.0, -0.5, None).
"""

from typing import NamedTuple, Optional


class Bound(NamedTuple):
    """Acceptable range around a reference value.

    Attributes:
        ref: the reference value (> 0).
        lower_frac: lower limit as a fraction of ref (-0.1 = 10 % below), None = open.
        upper_frac: upper limit as a fraction of ref (0.1 = 10 % above), None = open.
        unit: unit of ref and of the values checked, for messages.
    """

    ref: float
    lower_frac: Optional[float]
    upper_frac: Optional[float]
    unit: str

    @property
    def low(self) -> Optional[float]:
        """Lower limit (inclusive), None when open."""
        return None if self.lower_frac is None else self.ref * (1 + self.lower_frac)

    @property
    def high(self) -> Optional[float]:
        """Upper limit (inclusive), None when open."""
        return None if self.upper_frac is None else self.ref * (1 + self.upper_frac)


def check_bound(bound: Bound) -> Bound:
    """Validate a bound at definition time and return it.

    Raises:
        ValueError: ref <= 0, lower_frac > 0, lower_frac < -1, upper_frac < 0, or
            lower limit above upper limit (message names the bound).
    """
    if bound.ref <= 0:
        raise ValueError("bound %r: ref must be > 0" % (bound,))
    if bound.lower_frac is not None and not -1 <= bound.lower_frac <= 0:
        raise ValueError("bound %r: lower_frac must be in [-1, 0]" % (bound,))
    if bound.upper_frac is not None and bound.upper_frac < 0:
        raise ValueError("bound %r: upper_frac must be >= 0" % (bound,))
    return bound


def below(value: float, bound: Bound) -> bool:
    """True when `value` is strictly under the bound's lower limit."""
    return bound.low is not None and value < bound.low


def above(value: float, bound: Bound) -> bool:
    """True when `value` is strictly over the bound's upper limit."""
    return bound.high is not None and value > bound.high


def within(value: float, bound: Bound) -> bool:
    """True when `value` lies inside the bound (limits inclusive)."""
    return not below(value, bound) and not above(value, bound)


def grade_low(value: float, error: Bound, warning: Bound) -> str:
    """Severity of a value where lower is worse: "error" under `error`'s lower limit,
    "warning" under `warning`'s, else "info"."""
    if below(value, error):
        return "error"
    if below(value, warning):
        return "warning"
    return "info"


def describe(bound: Bound) -> str:
    """"0.5–open relative OPS": the acceptable range in words, for evidence."""
    low = "open" if bound.low is None else "%g" % bound.low
    high = "open" if bound.high is None else "%g" % bound.high
    return "%s–%s %s" % (low, high, bound.unit)


def lower_limits(error: Bound, warning: Bound) -> str:
    """"error below 0.5, warning below 0.9 relative OPS": two lower limits in words."""
    return "error below %g, warning below %g %s" % (error.low, warning.low, warning.unit)


#: Relative OPS (reference = 1.0) under which a slow build (non-MKL BLAS for GEMM, missing
#: vector kernels or oneDNN) is an error: half the reference, far outside the 5 % A/A
#: floor (compare.AA_FLOOR); the best FlexiBLAS backend of #931 (imkl) reached 46 % on
#: average (https://github.com/easybuilders/easybuild/issues/931).
LOSS_ERROR = check_bound(Bound(1.0, -0.50, None, "relative OPS"))
#: ... and a warning: 10 % is twice the A/A floor.
LOSS_WARNING = check_bound(Bound(1.0, -0.10, None, "relative OPS"))
