"""Markdown report from the golden results: snapshot, table shape, escaping, strictness."""

import dataclasses
import os

import jinja2
import pytest

from eb_torchperf.analysis.compare import compare, geomean_relative_ops
from testdata import record, view, with_findings
from eb_torchperf.records.findings import Finding
from eb_torchperf.present.report import render_markdown
from eb_torchperf.present.report.tables import pct

from auditcases import DATA, golden_result
from markdown_tables import parse_tables

SNAPSHOT = DATA / "report-debian-vs-wheel-v1.md"


def _markdown(result=None):
    return render_markdown(view(with_findings(result or golden_result())))



def test_markdown_matches_the_snapshot():
    text = _markdown()
    if os.environ.get("EB_TORCHPERF_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()


def test_every_table_row_has_the_header_cell_count_and_a_separator():
    tables = parse_tables(_markdown())
    assert len(tables) == 10  # meta, 4 findings' evidence, differences, ops, config, runtime, raw
    for table in tables:
        assert all(set(cell) <= set("-:") for cell in table[1]), table[0]
        assert {len(row) for row in table} == {len(table[0])}, table[0]


def test_ops_table_rows_are_the_computed_relative_ops():
    result = golden_result()
    expected = {(c.bench, " ".join("%s=%s" % kv for kv in c.params.items())):
                "inconclusive" if c.inconclusive else pct(c.relative_ops)
                for c in compare(result)}
    assert "inconclusive" in expected.values()  # the golden layernorm row: 60-292 %
    ops = next(t for t in parse_tables(_markdown()) if t[0][:2] == ["benchmark", "params"]
               and "relative OPS" in t[0])
    shown = {(row[0].strip("`"), row[1]): row[4] for row in ops[2:] if row[0].startswith("`")}
    assert shown == expected
    assert ops[-1][0] == "**geometric mean**"
    assert ops[-1][4] == "**%s**" % pct(geomean_relative_ops(compare(result)))


def test_config_side_by_side_marks_differences_in_bold():
    config = next(t for t in parse_tables(_markdown()) if t[0] == ["setting", "target", "reference"])
    rows = {row[0]: row[1:] for row in config[2:]}
    assert rows["**BLAS_INFO**"] == ["generic", "mkl"]
    assert rows["OpenMP"] == ["yes 201511", "yes 201511"]


def test_text_is_escaped_for_tables_and_github_html():
    result = golden_result()
    nasty = Finding("x-rule", "error", "pipe | and <b>tag</b>", {"a|b": "line1\nline2"},
                    "use `--x`", "https://example.org/a_b")
    text = render_markdown(view(dataclasses.replace(result, findings=(nasty,))))
    assert "#### pipe \\| and &lt;b&gt;tag&lt;/b&gt;" in text
    assert "| a\\|b | line1<br>line2 |" in text
    assert "Source: <https://example.org/a_b>" in text


def test_missing_view_fields_fail_loudly():
    shown = view(golden_result())
    del shown["raw"]
    with pytest.raises(jinja2.UndefinedError, match="raw"):
        render_markdown(shown)


def test_without_reference_rates_and_peak_fractions_are_shown():
    result = golden_result()
    alone = dataclasses.replace(result, reference=None, results=tuple(result.results_for("target")))
    text = _markdown(alone)
    assert "## Rates per benchmark (no reference)" in text
    # 2.97 GFLOP/s on 1 thread of a 2.596 GHz Zen 4 core (83.1 GFLOP/s nominal)
    assert "| `matmul_fp32` | n=512 | 2.97 GFLOP/s | 3.6 % |" in text
    assert "no reference measured: absolute rates only" in text


@pytest.mark.parametrize("reference, text", [
    (True, "OK: nothing measured (2 benchmarks skipped); no findings."),
    (False, "OK: nothing measured (2 benchmarks skipped); no findings.")])
def test_verdict_of_an_audit_where_everything_was_skipped(reference, text):
    """--device cuda on a machine without a GPU: not "no reference measured"."""
    from eb_torchperf.present.report.render import verdict
    golden = golden_result()
    skipped = tuple({"bench": name, "params": {}, "side": side, "reason": "no GPU"}
                    for name in ("gemm_cuda", "launch_cuda") for side in ("target", "reference"))
    result = dataclasses.replace(golden, results=(), skipped=skipped, findings=(),
                                 reference=golden.reference if reference else None)
    assert verdict(record(result)) == {"level": "ok", "text": text}


def _meta_rows(text):
    meta = parse_tables(text)[0]
    return {row[0]: row[1] for row in meta[2:]}


def test_meta_gives_the_worker_pairs_each_row_got():
    result = golden_result()
    assert _meta_rows(_markdown(result))["suite"] == "quick, 1 worker pair(s)"
    first = result.results[0]
    extra = tuple(dataclasses.replace(r, pair=1) for r in result.results
                  if (r.bench, r.params) == (first.bench, first.params))
    assert len(extra) == 2  # the row's target and reference results
    more = dataclasses.replace(result, results=result.results + extra)
    assert _meta_rows(_markdown(more))["suite"] == "quick, 1–2 worker pairs per row"
