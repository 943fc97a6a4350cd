"""The analysis of an audit is computed once and every output shows that one (issue 25).

Calls are counted by code object (sys.setprofile), so a module that imported
`compare`, `differences` or `assess` under its own name is counted too.
"""

import contextlib
import json
import pathlib
import shutil
import sys
from collections import Counter

from eb_torchperf.analysis.compare import compare
from eb_torchperf.cli.dispatch import main
from eb_torchperf.diagnosis.differences import differences
from eb_torchperf.diagnosis.verdict import assess
from eb_torchperf.present.report.tables import pct
from eb_torchperf.records.measurements import load_results

from auditcases import DATA

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"
#: A stored audit with a reference, findings and differences between the sides.
STORED = DATA / "results-debian-vs-wheel-v1.json"
COUNTED = {f.__code__: f.__name__ for f in (compare, differences, assess)}


@contextlib.contextmanager
def counted():
    """Counter of calls of compare, differences and assess inside the block."""
    calls = Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in COUNTED:
            calls[COUNTED[frame.f_code]] += 1
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def test_report_analyses_a_stored_audit_once(tmp_path, capsys):
    shutil.copy(STORED, tmp_path / "run.json")
    with counted() as calls:
        status = main(["report", str(tmp_path / "run.json"), "--format", "html,md,json",
                       "--out-dir", str(tmp_path / "out")])
    assert status == 1  # the stored Debian build has an error finding
    assert calls == {"compare": 1, "differences": 1, "assess": 1}
    assert "ERROR: target at 11.0 % of the reference" in capsys.readouterr().out


def test_audit_with_explain_analyses_once(tmp_path, monkeypatch, capsys):
    """`audit --explain` (measurement and profiling faked, everything else real):
    saving twice, the explain step, three report formats and the terminal share one
    analysis."""
    from eb_torchperf.explain_stage import run as explain_job
    from eb_torchperf.workflows import pipeline
    monkeypatch.setattr(pipeline, "measure", lambda plan, display: load_results(STORED))
    monkeypatch.setattr(explain_job, "run_profiles", lambda *args, **kwargs: ([], []))
    out = tmp_path / "run.json"
    with counted() as calls:
        status = main(["audit", "--explain", "--quiet", "--out", str(out),
                       "--format", "html,md", "--fail-on", "never"])
    assert status == 0
    assert calls == {"compare": 1, "differences": 1, "assess": 1}
    saved = json.loads(out.read_text())
    line = saved["analysis"]["verdict"]["text"]
    assert line.startswith("ERROR: target at 11.0 % of the reference")
    assert line in " ".join(capsys.readouterr().out.split())  # the terminal wraps it
    assert line in (tmp_path / "run.md").read_text()


def test_compare_json_reports_the_analysis_its_html_and_markdown_show(tmp_path):
    """Two stored runs are compared unpaired (no intervals): the JSON report holds those
    rows and the verdict the Markdown and HTML print, not a paired re-analysis."""
    a, b = (EXAMPLES / "wheel-2.13.0-vs-itself.json",
            EXAMPLES / "debian-python3-torch-vs-wheel-2.13.0.json")
    with counted() as calls:
        main(["compare", str(a), str(b), "--format", "json,md,html", "--out-dir", str(tmp_path),
              "--stem", "ab", "--fail-on", "never"])
    assert calls == {"differences": 1, "assess": 1}  # unpaired: compare() never runs
    analysis = json.loads((tmp_path / "ab.json").read_text())["analysis"]
    markdown, html = (tmp_path / "ab.md").read_text(), (tmp_path / "ab.html").read_text()
    assert analysis["rows"] and all(r["ci_low"] is None and r["pair_ratios"] == []
                                    for r in analysis["rows"])
    assert "**%s**" % analysis["verdict"]["text"] in markdown
    geomean = pct(analysis["geomean_relative_ops"])
    assert "| **geometric mean** | | | | **%s** |" % geomean in markdown
    assert geomean in html and analysis["verdict"]["text"].split(";")[0] in html
