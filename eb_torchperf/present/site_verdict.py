"""The site check's verdict: the site policy's reading of an audit's verdict, with its
one-line summary for logs (EasyBuild hook, `eb-torchperf sanity-check`, verdict.json).

`judge` words the pipeline's diagnosis.verdict.Verdict (records.analysis.Analysis.verdict,
assessed under the policy's fail level and minimum): "fail" when a finding reaches the
fail level, the geometric mean of relative OPS is below the minimum, or the audit could
not finish.
"""

import dataclasses
from typing import Optional, Tuple

from eb_torchperf.records.findings import Finding


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The judgement of one audit under a Policy.

    Attributes:
        status: "ok" (nothing at warning or above), "warning" (findings at warning or
            above but below the fail level) or "fail".
        geomean_relative_ops: geometric mean of relative OPS (1.0 = reference), None
            without a reference.
        blocking: findings at or above the fail level, most severe first.
        below_minimum: the geometric mean is below the policy's minimum.
        problem: why the audit is incomplete ("" when it completed).
        summary: one line for logs: status, the first reasons, the geometric mean.
    """

    status: str
    geomean_relative_ops: Optional[float]
    blocking: Tuple[Finding, ...]
    below_minimum: bool
    problem: str
    summary: str

    def to_json(self) -> dict:
        """JSON-ready dict (findings as Finding.to_json)."""
        data = dataclasses.asdict(self)
        data["blocking"] = [f.to_json() for f in self.blocking]
        return data


def finding_line(finding: Finding) -> str:
    """`[severity] rule-id: title` — how a finding appears in one-line summaries."""
    return "[%s] %s: %s" % (finding.severity, finding.rule_id, finding.title)


def _summary(status: str, geomean, policy, blocking, below, problem, warnings,
             inconclusive: int = 0) -> str:
    parts = []
    if problem:
        parts.append("audit incomplete: %s" % problem)
    if blocking:
        more = " (+%d more)" % (len(blocking) - 1) if len(blocking) > 1 else ""
        parts.append(finding_line(blocking[0]) + more)
    elif warnings:
        parts.append("%d finding(s) below the fail level, first %s"
                     % (len(warnings), finding_line(warnings[0])))
    if geomean is not None:
        minimum = (" (minimum %.0f %%)" % (policy.min_relative_ops * 100)
                   if policy.min_relative_ops is not None else "")
        parts.append("geomean relative OPS %.0f %% of reference%s%s"
                     % (geomean * 100, minimum, ", BELOW MINIMUM" if below else ""))
    elif inconclusive:
        parts.append("relative OPS inconclusive (%d row%s; more pairs: EB_TORCHPERF_PAIRS)%s"
                     % (inconclusive, "" if inconclusive == 1 else "s",
                        ", minimum not shown, BELOW MINIMUM" if below else ""))
    else:
        parts.append("no relative OPS (no reference measured)")
    label = {"ok": "clean", "warning": "WARNING", "fail": "FAIL"}[status]
    if status == "ok" and geomean is None and inconclusive:
        label = "UNDECIDED"  # never "clean" when no row decided (issue 26)
    return "%s: %s" % (label, "; ".join(parts))


def judge(judged, policy, with_reference: bool = True) -> Verdict:
    """The site policy's reading of an audit's verdict.

    Args:
        judged: the audit's diagnosis.verdict.Verdict, assessed by the pipeline under
            `policy.fail_level` and `policy.min_relative_ops` (request_of in
            workflows.sitecheck passes them), from its records.analysis.Analysis.
        policy: the diagnosis.sitepolicy.Policy: its mode, and its minimum relative OPS
            worded in the summary.
        with_reference: the audit measured a reference: in fail mode an audit of which
            no row decided then fails (issue 26).
    """
    problem = "" if judged.complete else (judged.problem or "the audit stopped early")
    status = judged.status
    if policy.mode == "fail" and with_reference and judged.decided == 0:
        # an audit that could not decide has not shown the build is fine (issue 26)
        status = "fail"
        problem = problem or "no row decided (busy host or too few pairs): not shown"
    return Verdict(status, judged.geomean, judged.blocking, judged.below_minimum,
                   problem, _summary(status, judged.geomean, policy, judged.blocking,
                                     judged.below_minimum, problem, judged.warnings,
                                     judged.inconclusive))
