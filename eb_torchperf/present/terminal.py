"""Terminal rendering of an audit with rich: relative OPS table, config diff, progress."""

import sys
from typing import List, Optional, Sequence

from rich.console import Console
from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.table import Table

from eb_torchperf.present import escape
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.present.configdiff import ConfigRow
from eb_torchperf.present.findings_view import finding_view
from eb_torchperf.present.units import (  # noqa: F401  (re-exported for callers)
    comparison_note, display_unit, evidence_text, format_params, format_rate, format_ratio,
    format_numerics, format_relative, format_seconds, format_share)


#: Width used when output is not a terminal (a log, a pipe): wide enough that the
#: relative OPS table does not wrap (rich would otherwise assume 80 columns).
PIPE_WIDTH = 140
class PipeConsole(Console):
    """A Console whose closed pipe (`| head -1`) raises BrokenPipeError for the shell to
    handle (cli.dispatch: exit 141), instead of rich's SystemExit(1): exit 1 means a
    finding."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def make_console(stderr: bool = False) -> Console:
    """A rich Console; PIPE_WIDTH columns when not writing to a terminal."""
    stream = sys.stderr if stderr else sys.stdout
    return PipeConsole(stderr=stderr, width=None if stream.isatty() else PIPE_WIDTH)


def ops_table(comparisons: Sequence, with_reference: bool, geo: Optional[float],
              intervals: bool = True) -> Table:
    """Benchmark rows (analysis.compare.Comparison): target rate, reference rate,
    relative OPS and its 95 % interval (`intervals` False drops that column: unpaired
    runs have none), then `geo`, the rows' geometric mean (Analysis.geomeans).  Names
    and params are never cut: they wrap instead."""
    table = Table(title="Relative OPS (reference = 100 %)" if with_reference
                  else "Absolute rates (no reference)")
    table.add_column("benchmark", no_wrap=True)
    table.add_column("params", overflow="fold")
    table.add_column("target")
    if with_reference:
        for name in ("reference", "relative OPS", "numerics") + (("95 % CI",) if intervals
                                                                  else ()) + ("note",):
            table.add_column(name, justify="right" if name != "note" else "left")
    for c in comparisons:
        row = [c.bench, format_params(c.params), format_rate(c.target)]
        if with_reference:
            ci = ("%s–%s" % (format_ratio(c.ci_low), format_ratio(c.ci_high))
                  if c.ci_low is not None else "")
            row += [format_rate(c.reference), format_relative(c), format_numerics(c)] + \
                ([ci] if intervals else []) + [comparison_note(c)]
        table.add_row(*map(escape.rich_text, row))
    if with_reference and geo is not None:
        table.add_row("geometric mean", "", "", "", format_ratio(geo), *([""] * (len(
            table.columns) - 5)), style="bold")
    return table


def models_table(analysis: Analysis) -> Optional[Table]:
    """The Models table (#931 layout: model, inference, training step, with intervals),
    or None when no model row has a relative OPS."""
    from eb_torchperf.present.models_view import row_cells  # it imports units, as this module
    rows = [row_cells(r) for r in analysis.model_rows]
    geo = analysis.geomeans.get("models")
    if not rows or geo is None:
        return None
    table = Table(title="Models: relative OPS (reference = 100 %)")
    for name in ("model", "device", "inference", "95 % CI", "training step", "95 % CI "):
        table.add_column(name, justify="left" if name in ("model", "device") else "right")
    for row in rows:
        table.add_row(row["model"], row["device"], row["infer"], row["infer_interval"],
                      row["train"], row["train_interval"])
    modes = {mode: format_ratio(analysis.geomeans[mode])
             if analysis.geomeans.get(mode) is not None else "" for mode in ("infer", "train")}
    table.add_row("geometric mean (all rows: %s)" % format_ratio(geo), "", modes["infer"], "",
                  modes["train"], "", style="bold")
    return table


def config_table(rows: List[ConfigRow], with_reference: bool) -> Table:
    """Build/runtime config side by side; differing rows in bold yellow."""
    table = Table(title="Build and runtime configuration")
    table.add_column("setting")
    table.add_column("target")
    if with_reference:
        table.add_column("reference")
    for row in rows:
        cells = [row.label, row.target] + ([row.reference] if with_reference else [])
        table.add_row(*map(escape.rich_text, cells), style="bold yellow" if row.differs else None)
    return table


def differences_table(rows: List[dict]) -> Table:
    """The differences between the two sides (report.differences_view rows)."""
    table = Table(title="Differences between target and reference")
    for column in ("group", "what", "target", "reference", "effect", "run time"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["group"], row["key"], row["target"], row["reference"], row["effect"],
                      row["run_time"], style="bold yellow" if row["effect"] == "unknown effect"
                      else None)
    return table


class LiveDisplay:
    """A rich live display (`self.live`: a Progress or Status) used as a context manager."""

    live = None

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc_info):
        self.live.__exit__(*exc_info)


class AuditProgress(LiveDisplay):
    """Progress bar over (pairs x benchmarks) on stderr, with the time spent and an
    estimate of the time left (rich's, from the rate of the steps done so far; extra
    pairs for rows short of precision can add to it); usable as the audit callback."""

    def __init__(self, console: Console, total: int):
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 TextColumn("{task.completed}/{task.total}"),
                                 TimeElapsedColumn(), TextColumn("spent,"),
                                 TimeRemainingColumn(), TextColumn("left"),
                                 console=console, transient=True)
        self.task = self.progress.add_task("starting", total=total)
        self.console = console
        self.live = self.progress

    def __call__(self, event: str, **info) -> None:
        if event == "start":
            self.progress.update(self.task, description=escape.rich_text(
                "pair %d: starting %s (%s)" % (info["pair"] + 1, info["side"], info["python"])))
        elif event == "bench" and info.get("extra"):
            self.progress.update(self.task, description=escape.rich_text(
                "extra pair %d (widest rows): %s %s" % (info["pair"] + 1, info["name"],
                                                       format_params(info["params"]))))
        elif event == "bench":
            done = info["pair"] * info["total"] + info["index"]
            self.progress.update(self.task, completed=done, description=escape.rich_text(
                "pair %d/%d: %s %s" % (info["pair"] + 1, info["pairs"], info["name"],
                                       format_params(info["params"]))))
        elif event == "wait_idle":  # --wait-idle (issue 26)
            self.progress.update(self.task, description=escape.rich_text(
                "waiting for an idle host: others use %s of the CPUs (%.0f s)" % (
                    "?" if info.get("other_cpu") is None else "%.0f %%" % (
                        100 * info["other_cpu"]), info["waited_s"])))
        elif event in ("error", "bench_failed"):
            self.console.print("[red]%s[/red]" % escape.rich_text(info.get("message")),
                               highlight=False)


#: Rich style per finding severity.
SEVERITY_STYLES = {"error": "bold red", "warning": "bold yellow", "info": "green"}


def evidence_table(table: dict) -> Table:
    """One evidence table of a finding (present.findings_view.table_of)."""
    shown = Table(title=escape.rich_text(table["title"]), title_justify="left", box=None,
                  padding=(0, 2, 0, 0))
    for column in table["columns"]:
        shown.add_column(escape.rich_text(column), overflow="fold")
    for row in table["rows"]:
        shown.add_row(*map(escape.rich_text, row))
    return shown


def print_finding(console: Console, f) -> None:
    """One finding (present.findings_view): the sentence, its facts and tables, the
    remedy's first line in bold, its details, the source."""
    from rich.padding import Padding
    view, text = finding_view(f), escape.rich_text
    console.print("[%s]%s[/] %s  %s" % (SEVERITY_STYLES[f.severity], f.severity.upper(),
                                          text(f.rule_id), text(view["title"])), highlight=False)
    for fact in view["facts"]:
        console.print("    %s: %s" % (text(fact["name"]), text(fact["value"])), highlight=False)
    for table in view["tables"]:
        console.print(Padding(evidence_table(table), (0, 0, 0, 4), expand=False))
    console.print("    [bold]remedy: %s[/]" % text(view["remedy"]), highlight=False)
    if view["remedy_details"]:
        console.print(Padding(text(view["remedy_details"]), (0, 0, 0, 12), expand=False),
                      highlight=False)
    console.print("    source: %s" % text(f.source), highlight=False)


def print_findings(console: Console, findings: Sequence) -> None:
    """Findings as blocks (print_finding), most severe first as given."""
    if not findings:
        console.print("No findings.")
        return
    for f in findings:
        print_finding(console, f)
