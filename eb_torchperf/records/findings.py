"""`Finding`: one diagnosed problem (or fact) with its evidence, remedy and source.

Shared by the audit diagnosis rules, the easyconfig linter and the GPU rules, so
every report, exit status and EasyBuild hook handles them the same way.
"""

import dataclasses
from typing import Dict, Iterable, Optional, Tuple

#: Severities in increasing order; exit-status policy compares by this order.
SEVERITIES = ("info", "warning", "error")
#: Units a quantity evidence value may carry (formatted by present/units.py):
#: "ratio" relative OPS (1.0 = 100 %), "fraction" of a peak or of a gap, "s" seconds,
#: "x" a factor, "cores"/"count" whole numbers, and the rate units of measurements.
QUANTITY_UNITS = ("ratio", "fraction", "s", "x", "cores", "count",
                  "GFLOP/s", "GB/s", "µs/op", "MHz", "CPUs", "rel_error")


def quantity(value: Optional[float], unit: str, low: Optional[float] = None,
             high: Optional[float] = None, **notes) -> dict:
    """A measured figure as an evidence value: raw number plus unit, JSON-ready.

    Args:
        value: in `unit` (ratios as fractions, times in seconds).
        unit: one of QUANTITY_UNITS.
        low, high: a 95 % interval, same unit.
        notes: extra keys, e.g. reference=0.046 (the reference side's value, same
            unit), noisy=True.

    Raises:
        ValueError: unknown unit.
    """
    if unit not in QUANTITY_UNITS:
        raise ValueError("unknown quantity unit %r (choose from %s)"
                         % (unit, ", ".join(QUANTITY_UNITS)))
    out = {"value": value, "unit": unit}
    if low is not None and high is not None:
        out.update(low=low, high=high)
    out.update(notes)
    return out


def severity_rank(severity: str) -> int:
    """Position of `severity` in SEVERITIES.

    Raises:
        ValueError: unknown severity (message lists the known ones).
    """
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ValueError("unknown severity %r (choose from %s)"
                         % (severity, ", ".join(SEVERITIES))) from None


@dataclasses.dataclass(frozen=True)
class Finding:
    """A diagnosed misconfiguration, or an informational fact.

    Attributes:
        rule_id: stable identifier, e.g. "blas-not-mkl".
        severity: one of SEVERITIES.
        title: one line, what is wrong.
        evidence: name -> value: config values as they are, measured figures as
            `quantity()` dicts (raw number and unit; formatted only by present/units).
        advice: the remedy, phrased for EasyBuild users (easyconfig, module, eb option).
        source: URL of the public report or documentation the rule rests on.
        subject: what it is about (e.g. "target", an easyconfig path); may be empty.
        line: line number in `subject` where that applies, else None.
        affects: benchmark families ("cpu/gemm") whose slow rows the finding can
            explain (set by diagnose from the rule's `affects`, rules.scope).
    """

    rule_id: str
    severity: str
    title: str
    evidence: Dict[str, object]
    advice: str
    source: str
    subject: str = ""
    line: Optional[int] = None
    affects: Tuple[str, ...] = ()

    def __post_init__(self):
        severity_rank(self.severity)
        if not self.rule_id or not self.title:
            raise ValueError("a Finding needs a rule_id and a title")

    def to_json(self) -> dict:
        """JSON-ready dict (evidence values must already be JSON values)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Finding":
        """Inverse of `to_json`."""
        return cls(**dict(data, affects=tuple(data.get("affects") or ())))


def worst(findings: Iterable[Finding]) -> Optional[str]:
    """The highest severity among `findings`, None when there are none."""
    ranks = [severity_rank(f.severity) for f in findings]
    return SEVERITIES[max(ranks)] if ranks else None


#: Exit statuses of every command (the one policy: exit_status): 0 nothing at the fail
#: level, 1 a finding at or above it, 2 bad input or a run cut short, 3 an internal error
#: (a bug: cli.dispatch), 130 stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells do).
EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
#: stdout closed by its reader (`| head -1`): 128 + SIGPIPE, as `cat` or `grep` end.
EXIT_PIPE = 141
#: The fail level that no finding reaches: findings never fail the run.
NEVER = "never"
#: Every fail level a command or the site policy accepts (--fail-on,
#: EB_TORCHPERF_FAIL_LEVEL): a severity, or NEVER.
FAIL_LEVELS = SEVERITIES + (NEVER,)
#: The error message of an audit stopped by Ctrl-C or SIGTERM (measure.interleave),
#: whose error entry also carries {"kind": INTERRUPTED_KIND}.
INTERRUPTED = "audit interrupted"
INTERRUPTED_KIND = "interrupted"
#: How a run ended (records.measurements.AuditResult.outcome).
COMPLETE, INTERRUPTED_RUN, CUT_SHORT = "complete", "interrupted", "cut-short"


def at_or_above(findings: Iterable[Finding], level: str) -> Tuple[Finding, ...]:
    """The findings whose severity is `level` or higher ("never": none), in order.

    The one rule by which a finding fails a run: exit statuses, the site policy's
    verdict, the fleet report and the EasyBuild parse hook use it.
    """
    if level == NEVER:
        return ()
    rank = severity_rank(level)
    return tuple(f for f in findings if severity_rank(f.severity) >= rank)


def exit_status(findings: Iterable[Finding], fail_on: str = "error",
                outcome: str = COMPLETE, failed: bool = False) -> int:
    """The exit status of a command over its findings.

    Args:
        findings: what the run found.
        fail_on: lowest severity that fails (FAIL_LEVELS; NEVER: findings never fail).
        outcome: how the run ended (AuditResult.outcome): EXIT_INTERRUPTED when
            INTERRUPTED_RUN, EXIT_ERROR when CUT_SHORT.
        failed: something else failed (a fleet job that did not finish): EXIT_ERROR,
            like a run cut short (exit 1 means findings and nothing else).

    Returns:
        EXIT_OK, EXIT_FINDINGS (a finding at or above `fail_on`), EXIT_ERROR (cut
        short, or `failed`) or EXIT_INTERRUPTED.
    """
    if outcome != COMPLETE:
        return EXIT_INTERRUPTED if outcome == INTERRUPTED_RUN else EXIT_ERROR
    if fail_on != NEVER:
        severity_rank(fail_on)
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if at_or_above(findings, fail_on) else EXIT_OK


def sort_findings(findings: Iterable[Finding]) -> Tuple[Finding, ...]:
    """Most severe first, then by rule id (stable, for reports and tests)."""
    return tuple(sorted(findings, key=lambda f: (-severity_rank(f.severity), f.rule_id)))
