"""Text, JSON and Markdown rendering from hand-built results (pure)."""

import json

import pytest

from eb_torchperf.records.findings import Finding
from eb_torchperf.lint.api import FileResult, exit_status_for
from eb_torchperf.lint.render import (SCHEMA_VERSION, md_cell, render, render_json,
                                      render_markdown, render_text, summarize)


def _finding(rule_id="blas-not-mkl", severity="warning", line=8, **extra):
    values = dict(rule_id=rule_id, severity=severity, title="CPU BLAS | not <MKL>",
                  evidence={"blas": "FlexiBLAS", "deps": ["a", "b"], "imkl": False},
                  advice="Add `('imkl', '2025.1.0')`", source="https://example.org/931",
                  subject="a.eb", line=line)
    values.update(extra)
    return Finding(**values)


RESULTS = (
    FileResult("a.eb", (_finding(), _finding("optarch-native", "info", None))),
    FileResult("b.eb", ()),
    FileResult("c.eb", problem="cannot parse: invalid syntax (<string>, line 1)"),
)


def test_summarize_counts():
    summary = summarize(RESULTS)
    assert {k: summary[k] for k in ("files", "linted", "problems", "findings")} == {
        "files": 3, "linted": 2, "problems": 1, "findings": 2}
    assert summary["by_severity"] == {"error": 0, "warning": 1, "info": 1}
    assert summary["by_rule"] == [
        {"rule_id": "blas-not-mkl", "severity": "warning", "count": 1},
        {"rule_id": "optarch-native", "severity": "info", "count": 1}]


def test_json_round_trips_findings():
    document = json.loads(render_json(RESULTS))
    assert document["schema_version"] == SCHEMA_VERSION
    assert [f["path"] for f in document["files"]] == ["a.eb", "b.eb", "c.eb"]
    assert Finding.from_json(document["files"][0]["findings"][0]) == RESULTS[0].findings[0]
    assert document["files"][2]["problem"].startswith("cannot parse")
    assert document["summary"]["problems"] == 1


def test_md_cell_escapes_pipes_html_and_newlines():
    assert md_cell("a|b <x> & c\nd") == "a\\|b &lt;x&gt; &amp; c<br>d"


def test_markdown_tables_have_seven_columns():
    text = render_markdown(RESULTS)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`a" not in line[:3]]
    finding_rows = [line for line in rows if "blas-not-mkl" in line or "optarch-native" in line]
    assert len(finding_rows) == 4  # two in a.eb's table, two in the summary
    for row in finding_rows[:2]:
        assert row.replace("\\|", "").count("|") == 8
    assert "### `c.eb`\n\n**Could not lint:** cannot parse: invalid syntax (&lt;string&gt;, line 1)" in text
    assert "### `b.eb`\n\nNo findings." in text
    assert "3 files, 2 linted, 1 not lintable, 2 findings." in text


def test_text_has_a_table_per_file_and_the_problem_line():
    text = render_text(RESULTS, width=200)
    assert "a.eb" in text and "blas-not-mkl" in text and "optarch-native" in text
    assert "b.eb: no findings" in text
    assert "c.eb: could not lint: cannot parse: invalid syntax (<string>, line 1)" in text
    assert "fix: Add `('imkl', '2025.1.0')`" in text
    assert "Summary: 3 files, 2 linted, 1 not lintable, 2 findings" in text
    assert "\x1b[" not in text


def test_text_color_uses_ansi():
    assert "\x1b[" in render_text(RESULTS[:1], color=True)


def test_render_rejects_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'html'"):
        render(RESULTS, "html")


@pytest.mark.parametrize("fail_on, expected", [("error", 2), ("never", 2)])
def test_exit_status_two_when_a_file_was_not_lintable(fail_on, expected):
    assert exit_status_for(RESULTS, fail_on) == expected


@pytest.mark.parametrize("fail_on, expected", [
    ("error", 0), ("warning", 1), ("info", 1), ("never", 0)])
def test_exit_status_by_severity(fail_on, expected):
    assert exit_status_for(RESULTS[:2], fail_on) == expected
