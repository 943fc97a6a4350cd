"""What the ReFrame check reports, computed from an audit's results (no ReFrame import).

Performance variables, one set per benchmark (and parameter set):
  <bench>             relative OPS, target throughput / reference throughput, unit "x"
                      (1.0 = as fast as the reference; ReFrame references
                      `(1.0, -0.1, None, "x")` fail below 90 %)
  <bench>_target      the target's absolute rate, in the benchmark's unit
  <bench>_reference   the reference's absolute rate, same unit
  geomean             geometric mean of the relative OPS, unit "x"
`<bench>` is the registry name, with "[k=v,...]" appended when the suite runs the
benchmark with several parameter sets.  Names contain no ":" (ReFrame separates
system, partition and variable with it).
"""

import dataclasses
import os
from typing import List, Optional, Tuple

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.findings import at_or_above
from eb_torchperf.records.measurements import AuditResult, load_results

GEOMEAN = "geomean"


@dataclasses.dataclass(frozen=True)
class Metric:
    """One performance variable: name, value, unit (ReFrame's perf_variables entry)."""

    name: str
    value: float
    unit: str


def metric_name(comparison: Comparison, multi: bool) -> str:
    """"matmul_fp32", or "thread_scaling[threads=1]" when the bench has several params."""
    if not multi or not comparison.params:
        return comparison.bench
    params = ",".join("%s=%s" % (k, v) for k, v in comparison.params.items())
    return "%s[%s]" % (comparison.bench, params.replace(":", "-"))


def analysed_results(path: str) -> Tuple[Optional[AuditResult], Optional[Analysis]]:
    """(the audit at `path`, its analysis by the pipeline), (None, None) without a file.

    Raises:
        SchemaError: unreadable results.
    """
    from eb_torchperf.workflows import pipeline
    if not os.path.exists(path):
        return None, None
    result = load_results(path)
    return result, pipeline.analyse(result, keep_findings=True)


def perf_metrics(analysis: Optional[Analysis]) -> List[Metric]:
    """Relative OPS and absolute rates of every benchmark measured, then the geomean.

    Args:
        analysis: the pipeline's analysis of the audit (analysed_results); None (no
            results file: `reframe --dry-run`, or a job that wrote none) gives none.
    """
    if analysis is None:
        return []
    comparisons = analysis.comparisons
    counts = {}
    for c in comparisons:
        counts[c.bench] = counts.get(c.bench, 0) + 1
    metrics = []
    for c in comparisons:
        name = metric_name(c, counts[c.bench] > 1)
        if c.relative_ops is not None:
            metrics.append(Metric(name, c.relative_ops, "x"))
        for side, rate in (("target", c.target), ("reference", c.reference)):
            if rate is not None:
                metrics.append(Metric("%s_%s" % (name, side), rate.value, rate.unit))
    geo = analysis.geomeans.get("all")
    if geo is not None:
        metrics.append(Metric(GEOMEAN, geo, "x"))
    return metrics


def sanity_problems(result: Optional[AuditResult], analysis: Optional[Analysis]) -> List[str]:
    """Why the audit does not pass sanity: not run, cut short, nothing measured, or
    findings of severity "error" (of `analysis`); empty when it passes."""
    if result is None:
        return ["the audit wrote no results file (see the job's stderr)"]
    problems = []
    if not result.complete:
        message = result.errors[-1].get("message", "") if result.errors else ""
        problems.append("the audit was cut short: %s" % (message or "no error recorded"))
    if not result.results:
        problems.append("the audit measured nothing")
    problems += ["error finding %s: %s" % (f.rule_id, f.title)
                 for f in at_or_above(analysis.findings, "error")]
    return problems
