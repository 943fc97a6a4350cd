"""The report's "Explain" section, rendered from the explain document of a real run.

Golden files (tests/data/README.md): explain-debian-vs-wheel-v1.json (the baseline
results) and explain-debian-vs-wheel-v1.explain.json (its profile diff and remedy
trials), from one short `eb-torchperf explain` run of Debian's python3-torch against
the torch 2.13.0 wheel.
"""

import dataclasses
import os
import re
import shutil

from eb_torchperf.cli.dispatch import main
from testdata import view, with_findings
from eb_torchperf.explain_stage.run import load_explain, with_profile_evidence
from eb_torchperf.records.measurements import load_results
from eb_torchperf.present.report import render_html, render_markdown
from eb_torchperf.present.terminal import format_ratio

from auditcases import DATA
from markdown_tables import parse_tables

RESULTS = DATA / "explain-debian-vs-wheel-v1.json"
EXPLAIN = DATA / "explain-debian-vs-wheel-v1.explain.json"
SNAPSHOT = DATA / "report-explain-section-v1.md"
HEADING = "## Explain: profile diff and remedy trials"


def _view(explain=True):
    explained = load_explain(EXPLAIN)
    result = with_profile_evidence(with_findings(load_results(RESULTS)), explained)
    return view(result, explain=explained if explain else None)


def _section(markdown):
    return markdown[markdown.index(HEADING):markdown.index("## Build configuration")]



def test_markdown_section_matches_the_snapshot():
    section = _section(render_markdown(_view()))
    if os.environ.get("EB_TORCHPERF_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(section)
    assert section == SNAPSHOT.read_text()


def test_section_tables_are_well_formed():
    tables = parse_tables(_section(render_markdown(_view())))
    explained = load_explain(EXPLAIN)
    assert len(tables) == 2 + len(explained.trials)  # workloads, operators, one per trial
    for table in tables:
        assert all(set(cell) <= set("-:") for cell in table[1]), table[0]
        assert {len(row) for row in table} == {len(table[0])}, table[0]


def test_operators_are_the_top_of_the_overall_diff():
    explained = load_explain(EXPLAIN)
    operators = next(t for t in parse_tables(_section(render_markdown(_view())))
                     if t[0][0] == "operator")
    assert [row[0].strip("`") for row in operators[2:]] == [
        o.op for o in explained.overall.top_ops()]
    assert operators[2][0] == "`aten::addmm`"
    assert operators[2][4] == "BLAS or oneDNN (GEMM)"


def test_each_trial_shows_before_and_after_per_benchmark():
    explained = load_explain(EXPLAIN)
    trial_tables = [t for t in parse_tables(_section(render_markdown(_view())))
                    if t[0][0] == "benchmark"]
    assert len(trial_tables) == len(explained.trials)
    for table, trial in zip(trial_tables, explained.trials):
        assert [row[2] for row in table[2:]] == [
            "%s → %s" % (format_ratio(r.before), format_ratio(r.after)) for r in trial.rows]


def test_rebuild_lists_the_findings_without_a_run_time_remedy():
    explained = load_explain(EXPLAIN)
    section = _section(render_markdown(_view()))
    rebuild = section[section.index("### Needs a rebuild"):]
    assert "- `mkl-missing`: no run-time remedy: change the easyconfig and rebuild" in rebuild
    for item in explained.rebuild:
        assert (item["why"] if item["rule_id"] is None else "`%s`" % item["rule_id"]) in rebuild


def test_no_section_without_an_explain_document():
    assert HEADING not in render_markdown(_view(explain=False))
    assert 'id="explain"' not in render_html(_view(explain=False))


def test_html_section():
    html = render_html(_view())
    section = html[html.index('<h2 id="explain">'):html.index('<h2 id="config">')]
    assert '<table id="explain-operators">' in section
    assert "<tr><td><code>aten::addmm</code></td>" in section
    assert '<ul id="explain-rebuild">' in section
    assert "<li><code>mkl-missing</code>: no run-time remedy" in section


def test_report_command_picks_up_the_explain_document(tmp_path, capsys):
    shutil.copy(RESULTS, tmp_path / "run.json")
    shutil.copy(EXPLAIN, tmp_path / "run.explain.json")
    assert main(["report", str(tmp_path / "run.json"), "--format", "md",
                 "--fail-on", "never"]) == 0
    markdown = (tmp_path / "run.md").read_text()
    assert HEADING in markdown
    assert "| profile: largest operator | aten::addmm |" in markdown
    assert re.search(r"\| profile: largest operator, share of the gap \| \d+\.\d % \|", markdown)
    assert "md report: %s" % (tmp_path / "run.md") in capsys.readouterr().out


def test_a_profile_without_trials_says_so_and_judges_no_rebuild():
    profile_only = dataclasses.replace(load_explain(EXPLAIN), trials=(), skipped=(), rebuild=())
    result = with_findings(load_results(RESULTS))
    section = _section(render_markdown(view(result, explain=profile_only)))
    assert "Not run with this profile (`eb-torchperf explain` runs them)." in section
    assert "### Needs a rebuild" not in section
    assert "| `aten::addmm` |" in section


def test_report_command_ignores_an_explain_document_of_another_audit(tmp_path, capsys):
    """An audit re-run into the same path, or another audit's file, is not explained by it."""
    import json
    shutil.copy(EXPLAIN, tmp_path / "run.explain.json")
    document = json.loads(RESULTS.read_text())
    document["created_utc"] = "2026-12-01T09:00:00+00:00"  # after the explain run
    (tmp_path / "run.json").write_text(json.dumps(document))
    assert main(["report", str(tmp_path / "run.json"), "--format", "md",
                 "--fail-on", "never"]) == 0
    assert HEADING not in (tmp_path / "run.md").read_text()
    err = capsys.readouterr().err
    assert err.startswith("ignoring %s: it was made at 2026-11-30T18:19:16+00:00, before this "
                          "audit (2026-12-01T09:00:00+00:00)" % (tmp_path / "run.explain.json"))
    document["created_utc"] = "2026-11-30T18:19:11+00:00"
    document["target"]["python"] = "/opt/other/python"
    (tmp_path / "run.json").write_text(json.dumps(document))
    assert main(["report", str(tmp_path / "run.json"), "--format", "md",
                 "--fail-on", "never"]) == 0
    assert HEADING not in (tmp_path / "run.md").read_text()
    assert ("it explains /usr/bin/python3 against .venv/bin/python, this audit "
            "/opt/other/python against .venv/bin/python") in capsys.readouterr().err


def test_report_command_ignores_a_broken_explain_document(tmp_path, capsys):
    shutil.copy(RESULTS, tmp_path / "run.json")
    (tmp_path / "run.explain.json").write_text("[]")
    assert main(["report", str(tmp_path / "run.json"), "--format", "md",
                 "--fail-on", "never"]) == 0
    assert HEADING not in (tmp_path / "run.md").read_text()
    assert capsys.readouterr().err.startswith("ignoring %s: " % (tmp_path / "run.explain.json"))
