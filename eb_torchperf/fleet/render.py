"""The fleet report: node types x benchmarks, findings per node type, failed jobs.

`fleet_view` builds a view model from the gathered outcomes (all numbers turned into
display text here, once); `render_markdown` and `render_terminal` only lay it out.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from rich.console import Group
from rich.table import Table
from rich.text import Text

from eb_torchperf.present import escape
from eb_torchperf.present.findings_view import remedy_parts
from eb_torchperf.present.units import format_ratio
from eb_torchperf.analysis.compare import AA_FLOOR, Comparison, geomean_relative_ops
from eb_torchperf.records.findings import sort_findings
from eb_torchperf.fleet.gather import JobOutcome
from eb_torchperf.fleet.plan import FleetManifest

MISSING = "—"
LEGEND = ("`*` significant: the 95 %% interval excludes 100 %% and the difference exceeds the "
          "%d %% A/A floor; `~` noisy (no interval). Without a reference, cells are "
          "absolute rates; \"inconclusive\": the interval stayed wider than ±10 %%."
          % round(100 * AA_FLOOR))


@dataclasses.dataclass(frozen=True)
class NodeRow:
    """One node type that produced results: identity and one cell per column."""

    name: str
    partition: str
    target: str
    host: str
    cpu: str
    gpu: str
    cells: Tuple[str, ...]
    geomean: str


@dataclasses.dataclass(frozen=True)
class FindingsBlock:
    """Findings of one node type; `lines` are "severity rule-id: title — advice";
    `summary` is "none" or "not diagnosed" when there are no lines."""

    name: str
    node: str
    lines: Tuple[str, ...]
    summary: str = ""


@dataclasses.dataclass(frozen=True)
class FailedRow:
    """A job that failed (or has not finished), with its cause and stderr tail."""

    name: str
    partition: str
    target: str
    job_id: str
    state: str
    cause: str
    stderr_tail: str


@dataclasses.dataclass(frozen=True)
class FleetView:
    """Everything the fleet report shows, as display text."""

    summary: str
    columns: Tuple[str, ...]
    rows: Tuple[NodeRow, ...]
    findings: Tuple[FindingsBlock, ...]
    findings_note: str
    failed: Tuple[FailedRow, ...]
    unfinished: Tuple[FailedRow, ...]


def column_label(comparison: Comparison, multi: bool) -> str:
    """"matmul_fp32", or "thread_scaling threads=1" when the bench has several params."""
    if not multi or not comparison.params:
        return comparison.bench
    return "%s %s" % (comparison.bench,
                      " ".join("%s=%s" % (k, v) for k, v in comparison.params.items()))


def _columns(outcomes: Sequence[JobOutcome]) -> Dict[tuple, str]:
    """(bench, params text) -> label, in first-seen order over all ok jobs."""
    params_seen: Dict[str, set] = {}
    keys: List[Tuple[str, str, Comparison]] = []
    for outcome in outcomes:
        for c in outcome.comparisons:
            key = (c.bench, repr(sorted(c.params.items())))
            if key not in [k[:2] for k in keys]:
                keys.append((*key, c))
            params_seen.setdefault(c.bench, set()).add(key[1])
    return {(bench, params): column_label(c, len(params_seen[bench]) > 1)
            for bench, params, c in keys}


def cell_text(c: Optional[Comparison]) -> str:
    """"98.2 % *" (relative OPS with marks), the target's rate without a reference."""
    if c is None:
        return MISSING
    if c.inconclusive:
        return "inconclusive"
    if c.relative_ops is None:
        return "%.3g %s" % (c.target.value, c.target.unit) if c.target else MISSING
    marks = ("*" if c.significant else "") + ("~" if c.noisy else "")
    return format_ratio(c.relative_ops) + (" " + marks if marks else "")


def _node_row(outcome: JobOutcome, columns: Dict[tuple, str]) -> NodeRow:
    by_key = {(c.bench, repr(sorted(c.params.items()))): c for c in outcome.comparisons}
    geo = geomean_relative_ops(outcome.comparisons)
    job = outcome.job
    return NodeRow(job.name, job.partition, job.target, outcome.host or MISSING,
                   outcome.cpu_model or MISSING, outcome.gpus or MISSING,
                   tuple(cell_text(by_key.get(key)) for key in columns),
                   format_ratio(geo) or MISSING)


def _findings_block(outcome: JobOutcome) -> FindingsBlock:
    lines = tuple("%s %s: %s%s" % (f.severity, f.rule_id, f.title,
                                   " — " + " ".join(filter(None, remedy_parts(f.advice)))
                                   if f.advice else "")
                  for f in sort_findings(outcome.findings))
    summary = "" if lines else ("none" if outcome.findings_available else "not diagnosed")
    return FindingsBlock(outcome.job.name, outcome.cpu_model or outcome.host or MISSING, lines,
                         summary)


def _failed_row(outcome: JobOutcome) -> FailedRow:
    job = outcome.job
    state = job.state.describe() if job.state and job.job_id else (
        job.state.state if job.state else "not yet known")
    return FailedRow(job.name, job.partition, job.target, job.job_id or MISSING, state,
                     outcome.cause, outcome.stderr_tail)


def _summary(manifest: FleetManifest, outcomes: Sequence[JobOutcome]) -> str:
    counts = ", ".join("%d %s" % (sum(o.status == s for o in outcomes), s)
                       for s in ("ok", "failed", "unfinished")
                       if any(o.status == s for o in outcomes))
    return ("%d jobs (%s) · suite %s · reference %s · submitted %s · folder %s"
            % (len(outcomes), counts, manifest.audit.suite, manifest.audit.reference or "none",
               manifest.created_utc or "?", manifest.directory))


def fleet_view(manifest: FleetManifest, outcomes: Sequence[JobOutcome]) -> FleetView:
    """Build the view model of a gathered fleet run."""
    ok = [o for o in outcomes if o.status == "ok"]
    columns = _columns(ok)
    available = any(o.findings_available for o in ok)
    note = "" if available or not ok else (
        "not available: this eb_torchperf has no eb_torchperf.diagnosis.diagnose module and the "
        "results hold no findings, so none are shown")
    return FleetView(
        summary=_summary(manifest, outcomes), columns=tuple(columns.values()),
        rows=tuple(_node_row(o, columns) for o in ok),
        findings=tuple(_findings_block(o) for o in ok) if available else (),
        findings_note=note,
        failed=tuple(_failed_row(o) for o in outcomes if o.status == "failed"),
        unfinished=tuple(_failed_row(o) for o in outcomes if o.status == "unfinished"))


def _md_cell(text: str) -> str:
    return escape.markdown_text(text)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int) -> List[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    return ["| " + " | ".join(_md_cell(h) for h in header) + " |",
            "| " + " | ".join(align) + " |"] + \
        ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]


def _md_failed(title: str, rows: Sequence[FailedRow]) -> List[str]:
    lines = ["## %s" % title, ""]
    lines += _md_table(("partition", "target", "job", "Slurm state", "cause"),
                       [(r.partition, r.target, r.job_id, r.state, r.cause) for r in rows], 99)
    for r in rows:
        if r.stderr_tail:
            lines += ["", "stderr of %s (job %s), last lines:" % (
                escape.markdown_text(r.name), escape.markdown_text(r.job_id)), "",
                      escape.markdown_fence(r.stderr_tail)]
    return lines


def _md_findings(view: FleetView) -> List[str]:
    lines = ["## Findings per node type"]
    if view.findings_note:
        lines += ["", "Findings: " + view.findings_note + "."]
    for block in view.findings:
        head = "**%s** (%s):" % (escape.markdown_text(block.name),
                                  escape.markdown_text(block.node))
        lines += ["", head + " " + block.summary] if not block.lines else \
            ["", head, ""] + ["- " + _md_cell(line) for line in block.lines]
    return lines


def _md_ops(view: FleetView) -> List[str]:
    lines = ["## Relative OPS per node type (reference = 100 %)", ""]
    if not view.rows:
        return lines + ["No job produced complete results."]
    lines += _md_table(("partition", "target", "node", "CPU", "GPU") + view.columns
                       + ("geomean",),
                       [(r.partition, r.target, r.host, r.cpu, r.gpu) + r.cells + (r.geomean,)
                        for r in view.rows], 5)
    return lines + ["", LEGEND]


def render_markdown(view: FleetView) -> str:
    """The fleet report as Markdown: sections separated by one blank line."""
    sections = [["# eb-torchperf fleet report", "", escape.markdown_text(view.summary)],
                _md_ops(view),
                _md_findings(view)]
    if view.failed:
        sections.append(_md_failed("Failed jobs", view.failed))
    if view.unfinished:
        sections.append(_md_failed("Unfinished jobs", view.unfinished))
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


def _rich_failed(title: str, rows: Sequence[FailedRow]) -> Table:
    table = Table(title=title, title_style="bold red")
    for name in ("partition", "target", "job", "Slurm state", "cause"):
        table.add_column(name, overflow="fold")
    for r in rows:
        table.add_row(*map(escape.rich_text, (r.partition, r.target, r.job_id, r.state, r.cause)))
    return table


def render_terminal(view: FleetView) -> Group:
    """The fleet report as rich renderables (print with a rich Console)."""
    parts = [Text(view.summary)]
    table = Table(title="Relative OPS per node type (reference = 100 %)")
    for name in ("partition", "target", "node", "CPU", "GPU"):
        table.add_column(name, overflow="fold")
    for name in view.columns + ("geomean",):
        table.add_column(name, justify="right")
    for r in view.rows:
        table.add_row(*map(escape.rich_text, (r.partition, r.target, r.host, r.cpu, r.gpu,
                                               *r.cells, r.geomean)))
    parts += [table, Text(LEGEND.replace("`", ""), style="dim")]
    if view.findings_note:
        parts.append(Text("Findings: " + view.findings_note, style="dim"))
    for block in view.findings:
        parts.append(Text("Findings on %s (%s): %s" % (block.name, block.node, block.summary)))
        parts += [Text("  " + line) for line in block.lines]
    if view.failed:
        parts.append(_rich_failed("Failed jobs", view.failed))
    if view.unfinished:
        parts.append(_rich_failed("Unfinished jobs", view.unfinished))
    return Group(*parts)
