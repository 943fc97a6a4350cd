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


def failed_rows(errors: Iterable[dict]) -> Set[Key]:
    """The rows of the audit's errors (AuditResult.errors) that failed on a side."""
    return {row_key(e["bench"], e.get("params") or {}) for e in errors if e.get("bench")}


#: Extra pairs may take at least this share of the time the suite's first pairs took.
#: On the 2-core VM (2026-12-04) Debian's python3-torch (GEMM at 3 % of the wheel) took
#: 53 s for its 3 pairs; at 4.0 s per row (64 s) its add_bandwidth row (pairs 0.52-0.86)
#: got 3 extra pairs and stayed inconclusive in 2 of 4 audits; the idle A/A takes 28 s.
EXTRA_SHARE = 0.5


def audit_budget_s(results: Iterable, row_budget_s: Callable[[str], float], min_s: float,
                   first_pairs_s: float = 0.0) -> float:
    """Seconds the whole audit may take before no extra pair starts (from the start of
    its first pair): the sum of `row_budget_s(bench)` over the rows measured so far (a
    row no side could run, such as a GPU row on a host without one, costs nothing and
    buys nothing), at least `min_s`, and at least `first_pairs_s` (the wall seconds the
    suite's pairs took) x (1 + EXTRA_SHARE), so a slow target still gets extra pairs.

    Why rows measured: on the 2-core VM (2026-12-04) the quick plan's 8 GPU rows,
    skipped on both sides, raised the budget from 67 s (16 CPU rows x 4.2 s) to 101 s,
    and idle A/A audits whose rows took long to decide ran 80-83 s (bound: 70 s).
    """
    rows_s = sum(row_budget_s(bench) for bench, _ in {r.key for r in results})
    return max(rows_s, min_s, first_pairs_s * (1 + EXTRA_SHARE))


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
