"""Terminal rendering of `explain` with rich: profile diff, remedy trials, progress."""

from typing import Optional, Sequence

from rich.console import Console
from rich.table import Table

from eb_torchperf.present import escape
from eb_torchperf.present.terminal import (LiveDisplay, format_params, format_seconds,
                                          format_share)
from eb_torchperf.present.units import format_percent, format_ratio


def op_sentence(diff, index: int = 0) -> str:
    """"aten::addmm: 96 % of the difference, 3.9 s vs 45 ms" for the index-th top operator."""
    top = diff.top_ops()
    if len(top) <= index:
        return ""
    op = top[index]
    return "%s: %s of the difference, %s vs %s" % (op.op, format_share(op.share),
                                                    format_seconds(op.target_s),
                                                    format_seconds(op.reference_s))


def _add_row(table: Table, *cells: str) -> None:
    """A row of literal text (operator names, labels and messages hold no markup)."""
    table.add_row(*map(escape.rich_text, cells))


def workloads_table(diffs: Sequence) -> Table:
    """One row per workload: self CPU per step on each side and the largest operators."""
    table = Table(title="Profile diff: self CPU time per step (torch.profiler)")
    for name in ("workload", "target", "reference", "extra", "largest shares of the extra time"):
        table.add_column(name, justify="right" if name in ("target", "reference", "extra")
                         else "left")
    for d in diffs:
        tops = ", ".join("%s %s" % (o.op, format_share(o.share)) for o in d.top_ops(limit=3))
        _add_row(table, d.workload, format_seconds(d.target.total_self_s),
                      format_seconds(d.reference.total_self_s), format_seconds(d.gap_s),
                      tops or "target not slower")
    return table


def _gap_table(title: str, first: str, last: str) -> Table:
    """A table of `first`, share of gap, target and reference time (right-aligned), `last`."""
    table = Table(title=title)
    table.add_column(first)
    for name in ("share of gap", "target", "reference"):
        table.add_column(name, justify="right")
    table.add_column(last)
    return table


def operators_table(diff) -> Table:
    """The operators holding most of `diff`'s extra time, with their backend."""
    table = _gap_table("Operators behind the gap (%s)" % diff.workload, "operator", "runs on")
    for op in diff.top_ops():
        backend = next(b for b in diff.backends if b.backend == op.backend)
        _add_row(table, op.op, format_share(op.share), format_seconds(op.target_s),
                      format_seconds(op.reference_s), backend.title)
    return table


def backends_table(diff) -> Table:
    """Backends summed: share of the gap and what decides their speed."""
    table = _gap_table("By backend (%s)" % diff.workload, "backend", "depends on")
    for b in diff.backends:
        if b.share is not None and abs(b.share) < 0.01:
            continue
        _add_row(table, b.title, format_share(b.share), format_seconds(b.target_s),
                      format_seconds(b.reference_s), b.depends_on)
    return table


def _group_text(trial, gemm: bool) -> str:
    group = trial.group(gemm)
    return "" if group is None else "%.2f → %.2f (%d)" % group


def trials_table(trials: Sequence) -> Table:
    """One row per remedy trial: setting, whether it took effect, GEMM/other rows, verdict."""
    table = Table(title="Remedy trials: relative OPS before → after (rows), reference = 1.00")
    for name in ("#", "setting", "verifies", "took effect", "GEMM rows", "other rows",
                 "verdict"):
        table.add_column(name)
    for index, t in enumerate(trials):
        _add_row(table, str(index + 1), t.trial.label, ", ".join(t.trial.rule_ids),
                      "yes" if t.applied else "NO", _group_text(t, True),
                      _group_text(t, False), t.verdict)
    return table


def _row_key(row) -> tuple:
    return row.bench, format_params(row.params)


def trial_rows_table(trials: Sequence) -> Table:
    """Benchmarks x trials: baseline relative OPS and the relative OPS with each remedy."""
    table = Table(title="Relative OPS per benchmark with each remedy (reference = 100 %)")
    table.add_column("benchmark")
    table.add_column("baseline", justify="right")
    for index, _ in enumerate(trials):
        table.add_column("trial %d" % (index + 1), justify="right")
    by_trial = [{_row_key(r): r for r in t.rows} for t in trials]
    for key in dict.fromkeys(k for rows in by_trial for k in rows):
        rows = [m.get(key) for m in by_trial]
        before = next((r.before for r in rows if r is not None and r.before is not None), None)
        _add_row(table, "%s %s" % key, format_ratio(before),
                      *(format_ratio(r.after if r else None) for r in rows))
    return table


def trial_summary(trial) -> str:
    """One line of an explain_stage.trials.TrialResult: "OMP_NUM_THREADS=2: GEMM rows 3.5 % ->
    4.1 %, other rows 62 % -> 95 % of the reference (partly recovered)"."""
    parts = []
    for gemm, name in ((True, "GEMM rows"), (False, "other rows")):
        group = trial.group(gemm)
        if group:
            before, after = (format_percent(v) for v in group[:2])
            parts.append("%s %s -> %s" % (name, before, after))
    figures = ", ".join(parts) + " of the reference" if parts else "no paired rows"
    return "%s: %s (%s)" % (trial.trial.label, figures, trial.verdict)


def print_explain(console: Console, result) -> None:
    """Everything of an ExplainResult, in reading order."""
    if result.profiles:
        console.print(workloads_table(result.profiles))
        overall = result.overall
        if overall.gap_s > 0:
            console.print(operators_table(overall))
            console.print(backends_table(overall))
            console.print("Largest: " + op_sentence(overall), highlight=False, markup=False)
    if result.trials:
        console.print(trials_table(result.trials))
        for index, trial in enumerate(result.trials):
            console.print("trial %d: %s; child: %s"
                          % (index + 1, trial_summary(trial), trial.effect),
                          highlight=False, soft_wrap=True, markup=False)
        console.print(trial_rows_table(result.trials))
    for skip in result.skipped:
        console.print("not tried: %(remedy_id)s (%(rule_id)s): %(reason)s" % skip,
                      highlight=False, soft_wrap=True, markup=False)
    for item in result.rebuild:
        console.print("rebuild: %s%s" % (item["rule_id"] + ": " if item["rule_id"] else "",
                                         item["why"]), highlight=False, soft_wrap=True,
                      markup=False)
    for error in result.errors:
        console.print("[red]profile error: %s[/red]" % escape.rich_text(error["message"]),
                      highlight=False)


class ExplainProgress(LiveDisplay):
    """A one-line status on stderr while profiling and trials run; usable as callback."""

    def __init__(self, console: Console):
        self.console = console
        self.status = console.status("explain: starting")
        self.live = self.status
        self.trial = ""

    def __call__(self, event: str, **info) -> None:
        if event == "profile":
            self.status.update(escape.rich_text("profiling %s on the %s (round %d)"
                               % (info["workload"], info["side"], info["round"] + 1)))
        elif event == "profile_again":
            self.console.print(escape.rich_text(
                "%s: profiled at %.1f %% relative OPS where the audit measured %.1f %% "
                "(%.2fx apart): profiling it again" % (info["workload"], 100 * info["profiled"],
                                                      100 * info["measured"], info["factor"])),
                highlight=False)
        elif event == "trial":
            self.trial = "trial %d/%d: %s" % (info["index"] + 1, info["total"], info["label"])
            self.status.update(escape.rich_text(self.trial))
        elif event == "bench":
            self.status.update(escape.rich_text("%s: %s" % (self.trial, info["name"])))
        elif event in ("error", "bench_failed"):
            self.console.print("[red]%s[/red]" % escape.rich_text(info.get("message")),
                               highlight=False)
