"""The `analysis` section of a results document: what the reports show, as values.

A CI job or a dashboard reads this instead of parsing Markdown.  Written by
`AuditResult.save` and `report --format json` (measurements.SCHEMA_VERSION 2);
recomputed from the raw samples whenever a document is loaded, so it is never
trusted on input.  Keys (all numbers raw: relative OPS as a ratio, 1.0 = equal):

- `rows`: one per benchmark key: bench, params, family ("cpu/gemm"),
  relative_ops, ci_low, ci_high (95 % interval over worker pairs), significant,
  noisy, rounds, pairs, inconclusive (then relative_ops is None and `estimate` keeps
  the number: analysis.precision), estimate, pair_ratios, target/reference {value, unit,
  median_s, samples, rel_iqr} (None where a side was not measured), numerics (the raw
  errors of both sides against float64 and the row's state: analysis.numerics).
- `geomean_relative_ops`, `aa_floor`.
- `differences`: differences.Difference.to_json() per difference.
- `verdict`: {"level": "ok"|"info"|"warning"|"error", "text": the verdict line}.
Findings stay in the top-level `findings` list (Finding.to_json, with `affects`).
"""

from typing import Optional

from eb_torchperf.analysis.compare import AA_FLOOR, Comparison, compare, geomean_relative_ops
from eb_torchperf.diagnosis.differences import differences
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.diagnosis.rules.scope import row_scope


def _rate(rate) -> Optional[dict]:
    if rate is None:
        return None
    return {"value": rate.value, "unit": rate.unit, "median_s": rate.median_s,
            "samples": rate.samples, "rel_iqr": rate.rel_iqr, "kernels": list(rate.kernels)}


def row(c: Comparison) -> dict:
    """One comparison as JSON values."""
    return {"bench": c.bench, "params": c.params, "family": row_scope(c.bench),
            "relative_ops": c.relative_ops, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "significant": c.significant, "noisy": c.noisy, "rounds": c.rounds,
            "pairs": c.pairs, "inconclusive": c.inconclusive, "estimate": c.estimate,
            "pair_ratios": list(c.pair_ratios), "target": _rate(c.target),
            "reference": _rate(c.reference), "numerics": c.numerics}


def analysis(result: AuditResult) -> dict:
    """The analysis section of `result` (findings as stored on it)."""
    from eb_torchperf.present.report.render import verdict  # the report's own verdict line
    comparisons = compare(result)
    return {"rows": [row(c) for c in comparisons],
            "geomean_relative_ops": geomean_relative_ops(comparisons), "aa_floor": AA_FLOOR,
            "differences": [d.to_json() for d in differences(result.target, result.reference)],
            "verdict": verdict(result, comparisons)}
