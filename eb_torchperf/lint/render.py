"""Lay out lint results as text (rich tables), JSON or GitHub Markdown.

Layout only: results are already sorted and worded by the rules.  `summarize` is the
view model shared by all formats (and by `eb-torchperf lint --collection`).
"""

import io
import json
from collections import Counter
from typing import Dict, List, Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from eb_torchperf.present import escape
from eb_torchperf.records.findings import SEVERITIES, Finding, severity_rank
from eb_torchperf.lint.api import FileResult

FORMATS = ("text", "json", "md")
#: JSON document version.  History: 1 - first version (files, summary).
SCHEMA_VERSION = 1
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def summarize(results: Sequence[FileResult]) -> dict:
    """Counts over all results.

    Returns:
        {"files", "linted", "problems", "findings": ints, "by_severity": {severity: n},
        "by_rule": [{"rule_id", "severity", "count"}] most severe, then most frequent first}.
    """
    findings = [f for result in results for f in result.findings]
    per_rule = Counter((f.rule_id, f.severity) for f in findings)
    by_rule = [{"rule_id": rule, "severity": sev, "count": n} for (rule, sev), n in per_rule.items()]
    by_rule.sort(key=lambda row: (-severity_rank(row["severity"]), -row["count"], row["rule_id"]))
    problems = sum(1 for result in results if result.problem)
    return {"files": len(results), "linted": len(results) - problems, "problems": problems,
            "findings": len(findings),
            "by_severity": {sev: sum(1 for f in findings if f.severity == sev)
                            for sev in reversed(SEVERITIES)},
            "by_rule": by_rule}


def render(results: Sequence[FileResult], fmt: str, color: bool = False, width: int = 120) -> str:
    """Results in format `fmt` (one of FORMATS); `color`/`width` apply to text only."""
    if fmt == "json":
        return render_json(results)
    if fmt == "md":
        return render_markdown(results)
    if fmt == "text":
        return render_text(results, color=color, width=width)
    raise ValueError("unknown format %r (choose from %s)" % (fmt, ", ".join(FORMATS)))


def render_json(results: Sequence[FileResult]) -> str:
    """One JSON document: schema_version, files (FileResult.to_json), summary."""
    document = {"schema_version": SCHEMA_VERSION, "files": [r.to_json() for r in results],
                "summary": summarize(results)}
    return json.dumps(document, indent=2) + "\n"


def _evidence_lines(evidence: Dict[str, object]) -> List[str]:
    """"key: value" per evidence item, lists comma-joined."""
    def show(value):
        return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return ["%s: %s" % (key, show(value)) for key, value in evidence.items()]


def _finding_cell(f: Finding) -> Text:
    cell = Text(f.title, style="bold")
    for line in _evidence_lines(f.evidence):
        cell.append("\n  " + line, style="dim")
    cell.append("\nfix: " + f.advice)
    cell.append("\nsource: " + f.source, style="dim")
    return cell


def _file_table(result: FileResult) -> Table:
    table = Table(title=escape.rich_text(result.path), title_justify="left", box=box.SIMPLE_HEAVY,
                  show_lines=True, expand=True)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Rule", no_wrap=True)
    table.add_column("Line", justify="right", no_wrap=True)
    table.add_column("Finding", ratio=1, overflow="fold")
    for f in result.findings:
        table.add_row(Text(f.severity, style=_SEVERITY_STYLE[f.severity]), f.rule_id,
                      "" if f.line is None else str(f.line), _finding_cell(f))
    return table


def _summary_line(summary: dict) -> str:
    return ("%(files)d files, %(linted)d linted, %(problems)d not lintable, "
            "%(findings)d findings" % summary)


def _summary_table(summary: dict) -> Table:
    table = Table(box=box.SIMPLE_HEAVY)
    for name, justify in (("Rule", "left"), ("Severity", "left"), ("Count", "right")):
        table.add_column(name, justify=justify)
    for row in summary["by_rule"]:
        table.add_row(row["rule_id"], Text(row["severity"], style=_SEVERITY_STYLE[row["severity"]]),
                      str(row["count"]))
    return table


def render_text(results: Sequence[FileResult], color: bool = False, width: int = 120) -> str:
    """A rich table per file (or its problem line), then a summary table."""
    output = io.StringIO()
    console = Console(file=output, width=width, force_terminal=color,
                      color_system="standard" if color else None, highlight=False)
    for result in results:
        if result.problem:
            console.print(Text("%s: could not lint: %s" % (result.path, result.problem),
                               style="bold red"))
        elif result.findings:
            console.print(_file_table(result))
        else:
            console.print("%s: no findings" % result.path, markup=False)
    summary = summarize(results)
    console.print("Summary: " + _summary_line(summary))
    if summary["by_rule"]:
        console.print(_summary_table(summary))
    return output.getvalue()


def md_cell(text: object) -> str:
    """Text safe inside a GitHub Markdown table cell (escape.markdown_text)."""
    return escape.markdown_text(text)


def _md_file(result: FileResult) -> List[str]:
    lines = ["### %s" % escape.markdown_code(result.path), ""]
    if result.problem:
        return lines + ["**Could not lint:** %s" % md_cell(result.problem), ""]
    if not result.findings:
        return lines + ["No findings.", ""]
    lines += ["| Severity | Rule | Line | Finding | Evidence | Advice | Source |",
              "|---|---|---:|---|---|---|---|"]
    for f in result.findings:
        lines.append("| %s | `%s` | %s | %s | %s | %s | [source](%s) |" % (
            f.severity, f.rule_id, "" if f.line is None else f.line, md_cell(f.title),
            md_cell("\n".join(_evidence_lines(f.evidence))), md_cell(f.advice), f.source))
    return lines + [""]


def render_markdown(results: Sequence[FileResult]) -> str:
    """A Markdown table per file, then a summary table (renders on GitHub)."""
    summary = summarize(results)
    lines = ["## eb-torchperf lint", ""]
    for result in results:
        lines += _md_file(result)
    lines += ["### Summary", "", _summary_line(summary) + ".", "",
              "| Rule | Severity | Count |", "|---|---|---:|"]
    lines += ["| `%(rule_id)s` | %(severity)s | %(count)d |" % row for row in summary["by_rule"]]
    return "\n".join(lines) + "\n"
