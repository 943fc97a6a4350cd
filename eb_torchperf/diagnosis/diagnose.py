"""Turn an audit's facts and measurements into Findings.

A rule is a function `rule(target: ProbeResult, reference: Optional[ProbeResult],
comparisons: list[Comparison]) -> list[Finding]`; each module in RULE_MODULES lists
its rules in `RULES`.  Adding a rule is adding a function to one of those lists.
A module that fails to import is an error, never silently skipped.
"""

import dataclasses
import importlib
from typing import Callable, List, Optional, Sequence, Tuple

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.records.findings import Finding, sort_findings
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.diagnosis.rules.scope import scope_names
from eb_torchperf.diagnosis.rules.unexplained import unexplained_slowdown
from eb_torchperf.diagnosis.packaging_advice import advise, install_kind

#: Rule modules, in reading order.
RULE_MODULES = (
    "eb_torchperf.diagnosis.rules.build",
    "eb_torchperf.diagnosis.rules.runtime",
    "eb_torchperf.diagnosis.rules.gpu",
    "eb_torchperf.diagnosis.rules.blas",
    "eb_torchperf.diagnosis.rules.known_classes",
    "eb_torchperf.diagnosis.rules.measurement",
    "eb_torchperf.diagnosis.rules.numerics",
    "eb_torchperf.diagnosis.rules.host",
)


def load_rules(modules: Sequence[str] = RULE_MODULES) -> List[Callable]:
    """The RULES of every module in `modules`, in order.

    Raises:
        ImportError: a module is missing or fails to import.
        AttributeError: a module has no RULES list.
    """
    rules: List[Callable] = []
    for name in modules:
        rules.extend(importlib.import_module(name).RULES)
    return rules


def diagnose(result: AuditResult, comparisons: Optional[Sequence[Comparison]] = None,
             rules: Optional[Sequence[Callable]] = None,
             unexplained_step: bool = False, diffs: Sequence = ()) -> Tuple[Finding, ...]:
    """Run every rule over one audit.

    Args:
        result: the audit (target probe required for findings; None gives none).
        comparisons: the pipeline's comparisons of `result` (workflows.analyse).
        rules: rule functions (default: load_rules()).
        unexplained_step: run the final unexplained-slowdown step also with explicit
            `rules` (it always runs with the default rules).
        diffs: the differences of the two sides (diagnosis.differences.differences),
            the unexplained slowdown's candidates.

    Returns:
        Findings, most severe first (findings.sort_findings); a finding without a
        subject gets the target interpreter's path, one without `affects` the
        families its rule declares (rules.scope).  After all rules, slow rows no
        warning/error finding explains give one `unexplained-slowdown` warning
        (rules.unexplained) with the differences of the two sides as candidates.
        Advice is phrased for the target's packaging system first
        (diagnosis.packaging_advice).
    """
    if result.target is None:
        return ()
    comparisons = list(comparisons or ())
    kind = install_kind(result.target)
    found = []
    for rule in (load_rules() if rules is None else rules):
        for finding in rule(result.target, result.reference, comparisons):
            if finding.subject in ("", "target"):
                finding = dataclasses.replace(finding, subject=result.target.python)
            if not finding.affects and getattr(rule, "affects", None):
                finding = dataclasses.replace(finding, affects=scope_names(rule.affects))
            found.append(advise(finding, kind))
    if rules is None or unexplained_step:
        for finding in unexplained_slowdown(result, comparisons, found, diffs):
            found.append(dataclasses.replace(finding, subject=result.target.python))
    return sort_findings(found)

