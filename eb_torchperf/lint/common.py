"""Small helpers shared by the lint rules (pure, stdlib only)."""

from typing import Dict, Optional, Tuple

from eb_torchperf.records.findings import Finding
from eb_torchperf.lint.facts import EasyconfigFacts


def finding(facts: EasyconfigFacts, rule_id: str, severity: str, title: str,
            evidence: Dict[str, object], advice: str, source: str,
            line: Optional[int] = None) -> Finding:
    """A Finding about `facts.path`, at `line` (None: no line applies)."""
    return Finding(rule_id=rule_id, severity=severity, title=title, evidence=evidence,
                   advice=advice, source=source, subject=facts.path, line=line)


def version_tuple(text: str) -> Tuple[int, ...]:
    """Leading numeric components of a version: "2.9.1+cpu" -> (2, 9, 1), "12.8.0" -> (12, 8, 0).

    Stops at the first component that does not start with a digit; the digits that start
    a component count ("1rc1" -> 1).  () when the version starts with no digit.
    """
    numbers = []
    for part in str(text).split("."):
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        numbers.append(int(digits))
        if len(digits) < len(part):
            break
    return tuple(numbers)


def major_minor(text: str) -> str:
    """"major.minor" of a version ("3.13.1" -> "3.13"); the text itself if it has no minor."""
    numbers = version_tuple(text)
    return "%d.%d" % numbers[:2] if len(numbers) >= 2 else str(text)
