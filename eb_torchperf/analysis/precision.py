"""How precise a relative-OPS interval is, and which rows still need measuring.

Two stated targets, both as half-widths of the 95 % interval on the log scale
(half = (ln high - ln low) / 2; ln(1.05) = a "±5 %" interval):

- ADAPTIVE_HALF_WIDTH: the audit keeps adding fresh worker pairs for the rows whose
  interval is wider than this, widest first, until none is or the time budget is spent
  (audit.AuditRun, RunnerOptions.target_half_width);
- INCONCLUSIVE_HALF_WIDTH: a row whose interval is still wider than this at the end is
  "inconclusive" (compare.Comparison.inconclusive): no number, no finding, not in the
  geometric mean -- unless the whole interval lies outside the A/A floor band
  [1/(1+floor), 1+floor].  So is an ambiguous row: its centre outside the band, its
  interval reaching deep into it (is_ambiguous).  Width alone never hides a real gap:
  Debian's reference-BLAS torch at 3 % of the wheel with an interval of 2-5 % is ±40 %
  wide in relative terms, but it excludes 95-105 % and stays conclusive (and
  significant).

Why pairs, not rounds: two fresh processes of one build can differ by a per-process
amount that more rounds in the same processes do not remove.  Issue 16 found and
removed its two large causes (glibc malloc's per-process choice between heap and
page-faulted mmap, probe/allocator.py; one-thread rows staying on one vCPU of uneven
speed, probe.worker.calling_thread_on); what is left varies with the host, so the
interval is still taken over pairs (stats.two_level_ratio_with_ci) and narrows with more
pairs.
"""

import math
from typing import Optional

#: Rows wider than ±5 % get more fresh pairs while the audit's time budget lasts.
ADAPTIVE_HALF_WIDTH = 0.05
#: Rows wider than ±10 % at the end are inconclusive (unless they exclude the floor band).
#: ±10 % is the issue-16 acceptance bound on the median half-width on a 16-core host.
INCONCLUSIVE_HALF_WIDTH = 0.10


def log_half_width(low: Optional[float], high: Optional[float]) -> Optional[float]:
    """Half-width of [low, high] on the log scale; None without an interval."""
    if low is None or high is None or low <= 0 or high <= 0:
        return None
    return (math.log(high) - math.log(low)) / 2


def excludes_floor_band(low: Optional[float], high: Optional[float], floor: float,
                        margin: float = 1.0) -> bool:
    """True when the whole interval lies below 1/(1+floor) or above 1+floor, even when
    moved `margin` times towards 1.0 (a factor; 1.0: as it is)."""
    if low is None or high is None:
        return False
    return high * margin < 1.0 / (1.0 + floor) or low / margin > 1.0 + floor


def is_inconclusive(low: Optional[float], high: Optional[float], floor: float,
                    limit: float = INCONCLUSIVE_HALF_WIDTH) -> bool:
    """A row is inconclusive when its interval does not exclude the A/A floor band and
    either it is wider than ±`limit` (log scale), or it is ambiguous (is_ambiguous): its
    centre (sqrt(low x high), the estimate of a log-symmetric interval) lies outside the
    band while the interval reaches deep into it -- a "93 %" that cannot be told from
    the A/A floor.  No interval (one round) is not inconclusive: such a row is shown
    without an interval, as before.

    Examples (floor 5 %, limit 10 %): [0.02, 0.05] is conclusive (far below 95 %);
    [0.80, 1.30] is inconclusive; [0.97, 1.03] is conclusive (narrow);
    [1.02, 1.40] is inconclusive (excludes 1.0 but not the band: it was a "significant"
    A/A row on the H200 before issue 16); [0.861, 0.991] is inconclusive (ambiguous: an
    A/A GELU row on the 2-core VM read 92.4 % there after 7 pairs, issue 16), while
    [1.04, 1.187] is conclusive (it clears the inner half band) and [0.86, 0.94] too (it
    excludes the band).
    """
    half = log_half_width(low, high)
    if half is None or excludes_floor_band(low, high, floor):
        return False
    return half > math.log(1.0 + limit) or is_ambiguous(low, high, floor)


def is_ambiguous(low: float, high: float, floor: float) -> bool:
    """True when the centre of [low, high] lies outside the A/A floor band while the
    interval does not even clear the inner half of the band ([1/(1+floor/2), 1+floor/2]).

    Why the inner half: on the 2-core VM an A/A GELU row read 92.4 % [86.1-99.1 %] (a
    per-process bias, issue 16), while Debian's torch 1.13 ran the one-thread denormal
    row at 111 % [104-119 %] of the 2.13 wheel (a real, lower dispatch cost: 112-118 %
    in every earlier run).  Both reach into the 95-105 % band; only the A/A row reaches
    past 97.5-102.5 %.  Over 10 A/A runs (160 rows) and 3 Debian-vs-wheel runs measured
    with this rule, no A/A row was conclusive outside ±5 % and no Debian row was
    inconclusive.
    """
    return (outside_floor_band(math.sqrt(low * high), floor)
            and not excludes_floor_band(low, high, floor / 2))


def clears_floor_band(low: Optional[float], high: Optional[float], floor: float) -> bool:
    """True when the interval excludes the A/A floor band by at least its own
    half-width: moved by that much towards 1.0 it would still lie outside.  Debian's
    reference-BLAS GEMM at 3 % [2-5 %] clears it by far; an A/A embedding_bag row at
    84.5 % [75.5-94.5 %] over 4 pairs (issue 16, 2-core VM) excludes the band only
    just and does not."""
    half = log_half_width(low, high)
    return half is not None and excludes_floor_band(low, high, floor, math.exp(half))


def needs_more(low: Optional[float], high: Optional[float], floor: float,
               target: float = ADAPTIVE_HALF_WIDTH) -> Optional[float]:
    """The half-width of a row that should get another pair, else None.

    A row needs more when it does not clear the floor band by its own half-width
    (clears_floor_band: a 3 % row is answered however wide its interval is; a row that
    excludes the band only just gets more pairs, so that a few pairs on the same side of
    1.0 do not end its measurement) and either
    - its interval is wider than ±`target`, or
    - its centre lies outside the band while its interval does not clear the band.
      Such a row reads as a gap of a few per cent that may be noise; on the 2-core VM
      an A/A embedding_bag row stopped at 105.9 % [101-111 %] and a softmax row at
      93.5 % (issue 16, 5 A/A runs), both narrower than ±5 %.
    A row without an interval (one round so far) needs more, with an infinite width.
    """
    half = log_half_width(low, high)
    if half is None:
        return math.inf
    if clears_floor_band(low, high, floor):
        return None
    if half > math.log(1.0 + target) or outside_floor_band(math.sqrt(low * high), floor):
        return half
    return None


def min_detectable(low: Optional[float], high: Optional[float], floor: float
                   ) -> Optional[float]:
    """The smallest loss (fraction of the reference's speed) a row with this interval
    could show as significant: a ratio r is significant when its interval, of the same
    log half-width, clears the floor band, i.e. ln(1/r) > half + ln(1+floor).  A ±25 %
    row at a 5 % floor sees only losses above 1 - 1/(1.25 x 1.05) = 24 %.  None without
    an interval."""
    half = log_half_width(low, high)
    if half is None:
        return None
    return 1.0 - math.exp(-(half + math.log1p(floor)))


def outside_floor_band(ratio: float, floor: float) -> bool:
    """True when a relative OPS `ratio` lies outside [1/(1+floor), 1+floor]."""
    return ratio < 1.0 / (1.0 + floor) or ratio > 1.0 + floor
