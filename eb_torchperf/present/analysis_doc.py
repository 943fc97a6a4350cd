"""The `analysis` section of a results document: what the reports show, as values.

A CI job or a dashboard reads this instead of parsing Markdown.  Written by
`AuditResult.save` and `report --format json` (measurements.SCHEMA_VERSION 2);
recomputed from the raw samples whenever a document is loaded (workflows.analyse), so
it is never trusted on input.  Keys (all numbers raw: relative OPS as a ratio, 1.0 = equal):

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

from eb_torchperf.records.analysis import Analysis, row_json
from eb_torchperf.records.measurements import AuditResult


def analysis(result: AuditResult, record: Analysis) -> dict:
    """The analysis section of `result` from its analysis (records.analysis.Analysis:
    the pipeline's, computed once)."""
    from eb_torchperf.present.report.render import verdict  # the report's own verdict line
    return {"rows": [row_json(c, record.families.get(c.bench)) for c in record.comparisons],
            "geomean_relative_ops": record.geomeans.get("all"), "aa_floor": record.aa_floor,
            "differences": [d.to_json() for d in record.differences],
            "verdict": verdict(record)}
