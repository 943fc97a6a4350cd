"""Which rows an extra fresh pair measures (adaptive pairs, docs/measurement.md).

After the suite's first pairs, rows the judge (analysis.compare.needs_more_pairs) still
wants more of get extra pairs while the audit's time budget lasts.  The judge ranks
them: rows that are still inconclusive come before rows that are only wider than the
±5 % target, and within each the narrowest first, because it needs the fewest pairs
to decide.  On the idle 2-core VM (2026-12-03) the budget bought 4-6 pairs per row when
every wide row got each pair widest first: the rows at ±10-14 % stayed inconclusive
while rows already decided narrowed from ±9 to ±6 %.
"""

from typing import Callable, Dict, Iterable, List, Sequence, Set, Tuple

from eb_torchperf.records.measurements import params_key

Key = Tuple[str, str]  # (bench, canonical params): BenchResult.key


def row_key(name: str, params: dict) -> Key:
    """A planned row's identity, as BenchResult.key gives it for a result."""
    return name, params_key(params)


def extra_plan(plan: Sequence[Tuple[str, dict]], results: Iterable, failed: Set[Key],
               cost_s: Dict[Key, float], judge: Callable, half_width: float,
               left_s: float) -> List[Tuple[str, dict]]:
    """The (bench, params) rows of `plan` the next extra pair measures, in plan order.

    Args:
        results: the BenchResults so far (both sides).
        failed: rows that failed on a side: they get no more pairs.
        cost_s: wall seconds one pair of each row took (its worst pair).
        judge: callable(target results, reference results, half_width) -> None when
            the row is decided, else a sort key (lower: measured first).
        left_s: seconds of the budget left; a row is taken only if its cost fits.
    """
    by_row: Dict[Key, list] = {}
    for r in results:
        by_row.setdefault(r.key, []).append(r)
    wanted = []
    for name, params in plan:
        key = row_key(name, params)
        mine = by_row.get(key)
        if key in failed or key not in cost_s or not mine:
            continue
        rank = judge([r for r in mine if r.side == "target"],
                     [r for r in mine if r.side == "reference"], half_width)
        if rank is not None:
            wanted.append((rank, key))
    chosen = set()
    for _, key in sorted(wanted, key=lambda item: item[0]):
        if cost_s[key] <= left_s:
            chosen.add(key)
            left_s -= cost_s[key]
    return [(n, p) for n, p in plan if row_key(n, p) in chosen]
