"""The final diagnosis step: a measured slowdown that no finding explains.

Runs after every rule.  A row is *slow* when it is significant (compare.Comparison:
interval excludes 100 % and the gap exceeds the A/A floor) and its whole interval
lies below 1 - AA_FLOOR;
the geometric mean counts as slow when its interval over worker pairs
(geomean_interval) lies below 1 - AA_FLOOR.  A slow row is
*explained* only by a warning or error finding whose rule declares the row's
benchmark family (rules.scope, Finding.affects); info findings say by definition that
no effect was measured.  What is left becomes one warning `unexplained-slowdown`,
with the rows, their relative OPS and intervals, and the differences between the two
sides (eb_torchperf.differences) as candidates, so the verdict can never read OK
while a measured gap has no cause.
"""

import math
from typing import List, Optional, Sequence, Tuple

from eb_torchperf.analysis import stats
from eb_torchperf.analysis.compare import AA_FLOOR, Comparison
from eb_torchperf.diagnosis.differences import Difference
from eb_torchperf.present.units import format_percent_interval
from eb_torchperf.records.findings import Finding, quantity, severity_rank
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.diagnosis.evidence import bench_label
from eb_torchperf.diagnosis.rules.scope import row_scope

RULE_ID = "unexplained-slowdown"
SOURCE = "https://www.brendangregg.com/methodology.html"
#: The probe's first CUDA call counts as slow when it takes this many times the
#: reference's and at least FIRST_CALL_MIN_S longer (one sample per side: a cold
#: page cache alone made it ~1.5x in A/A runs, so the bar is high).
FIRST_CALL_RATIO = 3.0
FIRST_CALL_MIN_S = 0.5
#: Candidates listed in the evidence (all are in the differences section).
MAX_CANDIDATES = 12


def slow_rows(comparisons: Sequence[Comparison]) -> List[Comparison]:
    """Rows significantly below the reference whose whole interval lies below the A/A
    floor (two processes of one build differ by up to the floor: an H200 A/A run had
    a row at 94 % [89-100 %], significant, which is not a gap to explain)."""
    return [c for c in comparisons if c.significant and c.relative_ops is not None
            and c.ci_high is not None and c.ci_high < 1.0 - AA_FLOOR]


def first_call_row(result: AuditResult) -> Optional[dict]:
    """{"row", "family", "relative_ops", "target_s", "reference_s"} for a first CUDA
    call slower than FIRST_CALL_RATIO x the reference's, else None."""
    if result.target is None or result.reference is None:
        return None
    t = result.target.fact("gpu", "first_call_s")
    r = result.reference.fact("gpu", "first_call_s")
    if not t or not r or t < FIRST_CALL_RATIO * r or t - r < FIRST_CALL_MIN_S:
        return None
    return {"row": "first CUDA call", "family": "cuda/startup",
            "relative_ops": quantity(r / t, "ratio"), "seconds": quantity(t, "s", reference=r)}


def explained(scope: Optional[str], findings: Sequence[Finding]) -> bool:
    """True when a warning/error finding declares `scope` ("cpu/conv")."""
    return scope is not None and any(
        severity_rank(f.severity) >= severity_rank("warning") and scope in f.affects
        for f in findings)


def _row(c: Comparison) -> dict:
    return {"row": bench_label(c), "bench": c.bench, "family": row_scope(c.bench),
            "relative_ops": quantity(c.relative_ops, "ratio", c.ci_low, c.ci_high,
                                     noisy=c.noisy)}


def _row_text(row: dict) -> str:
    ops = row["relative_ops"]
    return "%s at %s" % (row["row"], format_percent_interval(ops["value"], ops.get("low"),
                                                             ops.get("high")))


def unexplained_rows(result: AuditResult, comparisons: Sequence[Comparison],
                     findings: Sequence[Finding]) -> List[dict]:
    """The slow rows (and the first CUDA call, and the geometric mean) that no
    finding explains, as evidence dicts."""
    rows = [_row(c) for c in slow_rows(comparisons) if not explained(row_scope(c.bench), findings)]
    first = first_call_row(result)
    if first and not explained(first["family"], findings):
        rows.append(first)
    geo, low, high = geomean_interval(comparisons)
    below = [c for c in comparisons if c.relative_ops is not None and c.relative_ops < 1 - AA_FLOOR]
    if (high is not None and high < 1 - AA_FLOOR and not rows
            and any(not explained(row_scope(c.bench), findings) for c in below)):
        rows.append({"row": "geometric mean", "family": None,
                     "relative_ops": quantity(geo, "ratio", low, high),
                     "rows_below": [bench_label(c) for c in below]})
    return rows


def geomean_interval(comparisons: Sequence[Comparison]
                     ) -> Tuple[Optional[float], Optional[float], Optional[float]]:
    """Geometric mean over rows with a 95 % interval taken over worker pairs: each pair's
    geometric mean of its rows' ratios is one sample (pairs are the independent
    replicates, as for the rows themselves, compare.compare_pair); Student-t on their
    logs (stats.ratio_with_ci).  (None, None, None) without rows; no interval with
    fewer than two pairs measured on every row."""
    rows = [c for c in comparisons if c.pair_ratios]
    if not rows:
        return None, None, None
    pairs = min(len(c.pair_ratios) for c in rows)
    per_pair = [sum(math.log(c.pair_ratios[p]) for c in rows) / len(rows) for p in range(pairs)]
    return stats.ratio_with_ci(per_pair)


def unexplained_slowdown(result: AuditResult, comparisons: Sequence[Comparison],
                         findings: Sequence[Finding], diffs: Sequence[Difference]
                         ) -> List[Finding]:
    """[the unexplained-slowdown warning] or [] when every slow row is explained."""
    rows = unexplained_rows(result, comparisons, findings)
    if not rows:
        return []
    fired = {f.rule_id for f in findings}
    ordered = sorted(diffs, key=lambda d: (bool(set(d.known_effect) & fired), not d.changeable))
    candidates = [{"key": d.key, "group": d.group, "target": d.target,
                   "reference": d.reference, "known_effect": list(d.known_effect),
                   "changeable": d.changeable} for d in ordered[:MAX_CANDIDATES]]
    names = ", ".join("%s (%s)" % (d.key, "target %s, reference %s" % (
        "unset" if d.target is None else d.target, "unset" if d.reference is None else d.reference))
        for d in ordered[:4])
    title = "%d row%s slower than the reference with no known cause: %s" % (
        len(rows), "" if len(rows) == 1 else "s", "; ".join(_row_text(r) for r in rows[:4]))
    advice = ("No rule explains this gap. %s Run `eb-torchperf explain` with the same "
              "arguments: it re-runs these rows with each run-time difference removed "
              "(variable unset or set as on the reference, the reference's CPU affinity) "
              "and names the one that recovers them." % (
                  "The two sides differ in: %s%s." % (names, " and %d more" % (len(ordered) - 4)
                                                      if len(ordered) > 4 else "")
                  if ordered else "The probes show no difference between the two sides "
                  "(machine noise, or a fact the probe does not collect)."))
    evidence = {"rows": rows, "candidates": candidates,
                "differences": quantity(len(diffs), "count"),
                "aa_floor": quantity(AA_FLOOR, "fraction")}
    families = sorted({r["family"] for r in rows if r.get("family")})
    return [Finding(RULE_ID, "warning", title, evidence, advice, SOURCE, "target",
                    affects=tuple(families))]
