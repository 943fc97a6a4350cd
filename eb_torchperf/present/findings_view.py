"""A finding as a person reads it: the one place that words findings for every output.

The terminal (present.terminal.print_findings), the Markdown and HTML reports
(present.report.render) and `eb-torchperf gpu` all show a finding from `finding_view`:

- its title: one sentence naming the cause (or the candidates);
- `facts`: the scalar evidence, each value formatted (units.evidence_text; a bare float
  to 3 significant digits, never a raw float);
- `tables`: evidence that is a list of rows (the rows a finding is about, the
  candidates, the trials run) as a small table; a trial's rows are spread one per line,
  their relative OPS shown as "before → after" (percent of the reference);
- the remedy: its first sentence (what to do for the kind of installation audited:
  diagnosis.packaging_advice phrases it for an EasyBuild module, a distribution package,
  a venv...), then the details;
- the source.
The JSON keeps the raw values (records.findings.Finding.to_json).
"""

import re
from typing import Dict, List, Sequence, Tuple

from eb_torchperf.present.units import evidence_text, format_ratio

#: Keys of a row that hold relative OPS (ratio of the reference) before and after a trial.
BEFORE_AFTER = ("before", "after")
#: Where the first sentence of a remedy ends: ". " before a capital, a backquote or a
#: digit (not after "e.g." or "i.e.").
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!e\.g\.)(?<!i\.e\.)\s+(?=[A-Z`0-9])")


def cell_text(value) -> str:
    """One evidence value for a table cell or a fact line (no raw floats)."""
    if isinstance(value, float):
        return "%.3g" % value
    if isinstance(value, (list, tuple)) and not any(isinstance(v, dict) for v in value):
        return ", ".join(cell_text(v) for v in value)
    return evidence_text(value)


def _is_table(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(v, dict) for v in value)


def _spread(row: dict) -> List[dict]:
    """A row whose value is itself a list of rows (a trial and the rows it re-ran): one
    row per inner row, the outer fields repeated."""
    inner = next((k for k, v in row.items() if _is_table(v)), None)
    if inner is None:
        return [row]
    outer = {k: v for k, v in row.items() if k != inner}
    return [dict(outer, **r) for r in row[inner]]


def _header(key: str) -> str:
    return key.replace("_", " ")


def table_of(name: str, rows: Sequence[dict]) -> Dict[str, object]:
    """{"title", "columns", "rows"} of an evidence list of rows, every cell as text."""
    flat = [r for row in rows for r in _spread(row)]
    keys = list(dict.fromkeys(k for r in flat for k in r))
    paired = all(k in keys for k in BEFORE_AFTER)
    columns = [k for k in keys if not (paired and k in BEFORE_AFTER)]
    cells = []
    for r in flat:
        line = [cell_text(r.get(k)) if k in r else "" for k in columns]
        if paired:
            line.append("%s → %s" % tuple(format_ratio(r.get(k)) if r.get(k) is not None
                                          else "—" for k in BEFORE_AFTER))
        cells.append(line)
    headers = [_header(k) for k in columns] + (["relative OPS before → after"] if paired else [])
    return {"title": _header(name), "columns": headers, "rows": cells}


def remedy_parts(advice: str) -> Tuple[str, str]:
    """(the remedy's first line: what to do, the details after it): the line before the
    first newline (diagnosis.packaging_advice.FIRST_LINE per kind of installation), else
    the first sentence."""
    if "\n" in advice.strip():
        first, details = advice.strip().split("\n", 1)
        return first, details.strip()
    parts = _SENTENCE_END.split(advice.strip(), maxsplit=1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def finding_view(finding) -> Dict[str, object]:
    """A records.findings.Finding as display strings (see the module docstring)."""
    first, details = remedy_parts(finding.advice)
    return {"rule_id": finding.rule_id, "severity": finding.severity, "title": finding.title,
            "facts": [{"name": str(k), "value": cell_text(v)}
                      for k, v in finding.evidence.items() if not _is_table(v)],
            "tables": [table_of(str(k), v) for k, v in finding.evidence.items()
                       if _is_table(v)],
            "remedy": first, "remedy_details": details, "advice": finding.advice,
            "source": finding.source, "subject": finding.subject}
