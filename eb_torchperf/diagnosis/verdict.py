"""The verdict of one audit, as data: worst level, geometric mean, counts, reason.

The one verdict function: the report's verdict line (present.report.render.verdict),
the terminal (cli.report.print_outcome, through the report's line) and the site
policy's judgement (diagnosis.sitepolicy.judge: EasyBuild hook, sanity-check) are
renderings or uses of `assess`.  Nothing here formats text.
"""

import dataclasses
from typing import Dict, Optional, Sequence, Tuple

from eb_torchperf.analysis.compare import Comparison, geomean_relative_ops
from eb_torchperf.records.findings import (SEVERITIES, Finding, at_or_above, sort_findings,
                                           worst)
from eb_torchperf.records.measurements import AuditResult

#: Why the geometric mean is what it is (Verdict.speed).
SPEEDS = ("measured",           # a geometric mean over the benchmarks of both sides
          "inconclusive",       # measured on both sides, every row inconclusive (issue 16)
          "no-pair",            # a reference, but no benchmark measured on both sides
          "nothing-measured",   # no measurement at all (everything skipped)
          "no-reference")       # absolute rates only


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What one audit amounts to.

    Attributes:
        level: worst finding severity (records.findings.SEVERITIES), "ok" without any.
        status: "ok" (nothing at warning or above), "warning" (at warning or above but
            below the fail level, and the minimum met) or "fail" (a finding at the
            fail level, the geometric mean below the minimum, the audit cut short, or
            nothing measured because benchmarks failed).
        geomean: geometric mean of relative OPS (1.0 = the reference), None without.
        benchmarks: benchmarks with a relative OPS (the geometric mean's count).
        counts: severity -> number of findings, most severe first, zeros left out.
        findings: every finding, most severe first.
        blocking: findings at or above the fail level.
        warnings: findings at warning or above but below the fail level.
        below_minimum: the geometric mean is below `minimum`.
        minimum: the minimum geometric mean asked for (fraction), None: none.
        complete: the audit ran to its end.
        problem: the last error of an audit cut short ("" when none was recorded), or
            of a complete audit that measured nothing: the failed benchmarks and sides.
        speed: one of SPEEDS, why `geomean` is (or is not) there.
        skipped: distinct benchmarks (with parameters) skipped.
        inconclusive: rows shown as inconclusive (analysis.precision): not in the
            geometric mean, no finding.
        decided: rows measured on both sides whose relative OPS decided (neither
            inconclusive nor contended); an audit with a reference and decided == 0
            never reads OK or clean (its measurement-undecided finding says why).
    """

    level: str
    status: str
    geomean: Optional[float]
    benchmarks: int
    counts: Dict[str, int]
    findings: Tuple[Finding, ...]
    blocking: Tuple[Finding, ...]
    warnings: Tuple[Finding, ...]
    below_minimum: bool
    minimum: Optional[float]
    complete: bool
    problem: str
    speed: str
    skipped: int
    inconclusive: int = 0
    decided: int = 0


def failed_benchmarks(result: AuditResult) -> str:
    """When nothing was measured because benchmarks failed (the worker lived, the
    benchmark raised): "BENCH failed on the SIDE: MESSAGE; ..." (three at most), else ""."""
    if result.results:
        return ""
    failures = dict.fromkeys((e["bench"], e.get("side") or "?", str(e.get("message", "")))
                             for e in result.errors if e.get("bench"))
    return "; ".join("%s failed on the %s: %s" % f for f in list(failures)[:3])


def _speed(result: AuditResult, geomean: Optional[float], inconclusive: int) -> str:
    if geomean is not None:
        return "measured"
    if inconclusive:
        return "inconclusive"
    if not result.complete and result.reference is not None:
        return "no-pair"
    if not result.results:
        return "nothing-measured"
    return "no-pair" if result.reference is not None else "no-reference"


def assess(result: AuditResult, comparisons: Sequence[Comparison], fail_on: str = "error",
           minimum: Optional[float] = None) -> Verdict:
    """The verdict of `result` (findings attached) under a fail level and a minimum.

    Args:
        result: the audit, with its findings (may be none).
        comparisons: analysis.compare(result) (or the unpaired comparisons).
        fail_on: lowest severity that fails (records.findings.at_or_above).
        minimum: fail below this geometric mean of relative OPS (None: no minimum).
    """
    findings = sort_findings(result.findings)
    blocking = at_or_above(findings, fail_on)
    warnings = tuple(f for f in at_or_above(findings, "warning") if f not in blocking)
    geomean = geomean_relative_ops(comparisons)
    # a minimum must be shown to hold: rows measured but all left inconclusive (no
    # geometric mean) do not pass it
    unproven = geomean is None and any(c.inconclusive for c in comparisons)
    below = minimum is not None and (unproven or (geomean is not None and geomean < minimum))
    failed = failed_benchmarks(result)  # complete, yet nothing measured: not "ok"
    problem = failed if result.complete else str(
        result.errors[-1].get("message", "")) if result.errors else ""
    status = ("fail" if blocking or below or not result.complete or failed
              else "warning" if warnings else "ok")
    counts = {s: n for s in reversed(SEVERITIES)
              for n in [sum(f.severity == s for f in findings)] if n}
    return Verdict(
        level=worst(findings) or "ok", status=status, geomean=geomean,
        benchmarks=sum(c.relative_ops is not None for c in comparisons), counts=counts,
        findings=findings, blocking=blocking, warnings=warnings, below_minimum=below,
        minimum=minimum, complete=result.complete, problem=problem,
        speed=_speed(result, geomean, sum(c.inconclusive for c in comparisons)),
        skipped=len({(s["bench"], str(s["params"])) for s in result.skipped}),
        inconclusive=sum(c.inconclusive for c in comparisons),
        decided=sum(c.relative_ops is not None and c.pairs > 0 for c in comparisons))
