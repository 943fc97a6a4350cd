"""Regressions between builds: each audit against the previous build's audit.

"Previous build" is the latest earlier audit of the same software on the same node
type whose build is another one (a re-audit of one build is not a regression).  Two
audits are compared only when the pooling checks of diagnosis.pooling.identity agree
on the host, the CPU, the reference torch build and the reference environment (the
target build and its environment are what differ between builds): a row's relative
OPS is then a ratio against the same reference on the same hardware, and
new / previous is a ratio between the builds.  Its interval is the widest the two
audits' 95 % intervals allow (new low / previous high, new high / previous low).
A row is *slower* when that whole interval lies below 1 - MARGIN.
"""

import dataclasses
import math
from typing import Dict, List, Optional, Sequence, Tuple

from eb_torchperf.store.query import StoredAudit, StoredRow

#: identity fields (diagnosis.pooling.identity) two builds' audits must share.
MUST_MATCH = ("host", "CPU", "reference torch build", "reference environment")
#: Smallest loss called a regression: the audits' own precision target, ±5 %
#: (measure RunnerOptions.target_half_width, analysis/precision.py).
MARGIN = 0.05


@dataclasses.dataclass(frozen=True)
class RowChange:
    """One row in both audits: relative OPS to the reference in each (ratio with its
    95 % interval), and new / previous with its interval; `slower`/`faster` when the
    interval lies wholly beyond MARGIN."""

    bench: str
    params: str
    is_model: bool
    previous: Tuple[float, float, float]
    new: Tuple[float, float, float]
    ratio: float
    low: float
    high: float

    @property
    def slower(self) -> bool:
        return self.high < 1.0 - MARGIN

    @property
    def faster(self) -> bool:
        return self.low > 1.0 + MARGIN


@dataclasses.dataclass(frozen=True)
class BuildComparison:
    """An audit and its previous build's audit.

    Attributes:
        audit, previous: the two audits (previous None: the first build here).
        reason: why they were not compared ("" when they were).
        rows: the rows both measured, in the new audit's order.
        undecided: rows in both that one audit could not measure (no figure).
    """

    audit: StoredAudit
    previous: Optional[StoredAudit]
    reason: str = ""
    rows: Tuple[RowChange, ...] = ()
    undecided: Tuple[str, ...] = ()

    @property
    def slower_rows(self) -> Tuple[RowChange, ...]:
        return tuple(r for r in self.rows if r.slower)

    @property
    def geomean_ratio(self) -> Optional[float]:
        """Geometric mean of new / previous over the rows compared; None without rows."""
        if not self.rows:
            return None
        return math.exp(sum(math.log(r.ratio) for r in self.rows) / len(self.rows))


def _group(audit: StoredAudit) -> Tuple[str, str]:
    return audit.software, audit.node_type


def mismatch(audit: StoredAudit, previous: StoredAudit) -> str:
    """'the CPU differs (A against B)' for the first MUST_MATCH field that differs."""
    mine, theirs = dict(audit.identity), dict(previous.identity)
    for field in MUST_MATCH:
        if mine.get(field) != theirs.get(field):
            return "the %s differs (%s against %s)" % (field, mine.get(field), theirs.get(field))
    return ""


def previous_build(audit: StoredAudit, earlier: Sequence[StoredAudit]) -> Optional[StoredAudit]:
    """The latest audit in `earlier` (oldest first) of another build of the same
    software on the same node type."""
    for candidate in reversed(earlier):
        if _group(candidate) == _group(audit) and candidate.build != audit.build:
            return candidate
    return None


def _measured(row: StoredRow) -> bool:
    """A figure and its interval: an inconclusive row's estimate counts (its wide
    interval keeps it from deciding anything)."""
    return None not in (row.value, row.ci_low, row.ci_high) and min(
        row.value, row.ci_low, row.ci_high) > 0


def row_changes(new_rows: Sequence[StoredRow], old_rows: Sequence[StoredRow]
                ) -> Tuple[Tuple[RowChange, ...], Tuple[str, ...]]:
    """(rows both audits measured, names of rows in both that one could not measure)."""
    old = {row.key: row for row in old_rows}
    changes, undecided = [], []
    for row in new_rows:
        before = old.get(row.key)
        if before is None:
            continue
        if not (_measured(row) and _measured(before)):
            undecided.append(row.bench)
            continue
        changes.append(RowChange(
            row.bench, row.params, row.is_model,
            (before.value, before.ci_low, before.ci_high),
            (row.value, row.ci_low, row.ci_high), row.value / before.value,
            row.ci_low / before.ci_high, row.ci_high / before.ci_low))
    return tuple(changes), tuple(undecided)


def compare_builds(audit: StoredAudit, previous: Optional[StoredAudit],
                   rows: Dict[int, List[StoredRow]]) -> BuildComparison:
    """`audit` against `previous` with their stored rows (query.rows_of)."""
    if previous is None:
        return BuildComparison(audit, None, "no earlier build of %s on this node type"
                               % audit.software)
    reason = mismatch(audit, previous)
    if reason:
        return BuildComparison(audit, previous, reason + ": not compared")
    changes, undecided = row_changes(rows.get(audit.id, ()), rows.get(previous.id, ()))
    if not changes:
        reason = "no row measured in both audits"
    return BuildComparison(audit, previous, reason, changes, undecided)


def comparisons(audits: Sequence[StoredAudit], rows: Dict[int, List[StoredRow]]
                ) -> List[BuildComparison]:
    """Each audit of `audits` (oldest first) against its previous build."""
    return [compare_builds(a, previous_build(a, audits[:i]), rows) for i, a in enumerate(audits)]
