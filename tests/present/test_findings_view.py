"""Findings worded for people, from one place (issue 25): a sentence, small tables of the
rows (before → after where a trial ran), the remedy's first line, the source; the same
in the terminal, Markdown and HTML; no key: value dumps of nested evidence, no raw floats."""

import io
import re

from rich.console import Console

from eb_torchperf.present.findings_view import finding_view, remedy_parts
from eb_torchperf.present.terminal import print_findings
from eb_torchperf.records.findings import Finding, quantity

from testdata import record, view
from auditcases import golden_result

#: The confirmed-cause finding of the issue's example (difftrials.confirm's evidence).
CONFIRMED = Finding(
    "slowdown-cause-confirmed", "warning", "Slowdown caused by CPU affinity",
    {"rows": [{"row": "matmul_fp32 n=512", "bench": "matmul_fp32", "family": "cpu/gemm",
               "relative_ops": quantity(0.109, "ratio", 0.1, 0.12)}],
     "trials": [{"difference": "CPU affinity", "set": "affinity as on the reference",
                 "verdict": "recovered",
                 "rows": [{"bench": "matmul_fp32", "before": 0.10907529000470402,
                           "after": 4.136396085363468}]}],
     "cause": ["CPU affinity"], "share": 0.4213567},
    "Confirmed by trial: with affinity as on the reference the rows recover. Remove the "
    "setting where it comes from: the job's CPU binding, e.g. Slurm --cpu-bind.",
    "https://www.brendangregg.com/methodology.html")


def test_a_trial_becomes_a_table_with_before_and_after():
    shown = finding_view(CONFIRMED)
    trials = next(t for t in shown["tables"] if t["title"] == "trials")
    assert trials["columns"] == ["difference", "set", "verdict", "bench",
                                 "relative OPS before → after"]
    assert trials["rows"] == [["CPU affinity", "affinity as on the reference", "recovered",
                               "matmul_fp32", "10.9 % → 413.6 %"]]
    assert {"name": "share", "value": "0.421"} in shown["facts"]
    assert shown["remedy"] == ("Confirmed by trial: with affinity as on the reference the "
                               "rows recover.")
    assert shown["remedy_details"].startswith("Remove the setting")


def test_the_first_remedy_line_does_not_stop_at_an_abbreviation():
    first, rest = remedy_parts("Add imkl, e.g. ('imkl', '2024'); then rebuild. Details here.")
    assert (first, rest) == ("Add imkl, e.g. ('imkl', '2024'); then rebuild.", "Details here.")


def test_the_terminal_shows_no_raw_floats_nor_nested_dumps():
    console = Console(file=io.StringIO(), width=200)
    print_findings(console, [CONFIRMED])
    text = console.file.getvalue()
    assert "10.9 % → 413.6 %" in text and "0.10907529" not in text
    assert "rows: bench:" not in text and "trials: difference:" not in text
    assert re.search(r"remedy: Confirmed by trial: .* recover\.\n", text)


def test_markdown_and_html_word_a_finding_as_the_terminal_does():
    from eb_torchperf.present.report import render_html, render_markdown
    result = golden_result()
    result = result.__class__(**dict(result.__dict__, findings=(CONFIRMED,)))
    shown = view(result)
    markdown, html = render_markdown(shown), render_html(shown)
    assert "| CPU affinity | affinity as on the reference | recovered | matmul_fp32 | " \
           "10.9 % → 413.6 % |" in markdown
    assert "<td>10.9 % → 413.6 %</td>" in html
    for text in (markdown, html):
        assert "Confirmed by trial: with affinity as on the reference the rows recover." in text
        assert "0.10907529" not in text
    assert record(result).findings == (CONFIRMED,)
