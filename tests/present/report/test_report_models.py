"""The Models table (#931 layout) first in the Markdown, HTML and terminal reports; the
verdict quotes the models' geometric mean."""

import dataclasses
import io

from rich.console import Console

from auditcases import bench_pair, golden_result
from eb_torchperf.analysis.compare import compare
from testdata import record, view, with_findings
from eb_torchperf.present.report import render_markdown
from eb_torchperf.present.report.output import render_html
from eb_torchperf.present.terminal import models_table
from markdown_tables import parse_tables

#: Relative OPS of Debian's torch 1.13 vs the 2.13 wheel measured by hand (issue 17).
HAND = {"alexnet_infer": 0.19, "alexnet_train": 0.262, "resnet50_infer": 0.079,
        "resnet50_train": 0.069}


def _with_models():
    result = golden_result()
    extra = tuple(r for bench, ratio in HAND.items() for r in bench_pair(bench, {"b": 1}, ratio))
    return with_findings(dataclasses.replace(result, results=result.results + extra))


def test_markdown_has_the_models_table_first():
    text = render_markdown(view(_with_models()))
    assert text.index("## Models") < text.index("## Relative OPS per benchmark")
    table = next(t for t in parse_tables(text) if t[0][0] == "model")
    assert table[0] == ["model", "device", "inference", "95 % interval", "training step",
                        "95 % interval"]
    assert [row[:3] + row[4:5] for row in table[2:]] == [
        ["`alexnet`", "cpu", "19.0 %", "26.2 %"], ["`resnet50`", "cpu", "7.9 %", "6.9 %"],
        # each column's own geometric mean under it, all four rows' in the label
        ["**geometric mean** (all rows: 12.8 %)", "", "**%.1f %%**" % (100 * (0.19 * 0.079) ** 0.5),
         "**%.1f %%**" % (100 * (0.262 * 0.069) ** 0.5)]]
    # the micro rows stay in their own table, without the model rows
    ops = next(t for t in parse_tables(text) if t[0][0] == "benchmark" and "relative OPS" in t[0])
    assert not any("alexnet" in row[0] or "resnet50" in row[0] for row in ops)


def test_verdict_quotes_the_models_geomean_then_the_micro_suite():
    shown = view(_with_models())
    micro = [c for c in compare(golden_result()) if c.relative_ops is not None]
    assert shown["verdict"]["text"].split(": ", 1)[1].startswith(
        "target at 12.8 %% of the reference on 2 models (geometric mean of 4 inference and "
        "training rows); micro-suite %s (geometric mean of %d benchmarks)"
        % (shown["geomean"], len(micro)))


def test_html_and_terminal_models_tables():
    result = _with_models()
    html = render_html(view(result))
    assert '<table id="models-table">' in html
    assert html.index('id="models"') < html.index('id="ops"')
    assert "<td><code>resnet50</code></td><td>cpu</td><td class=\"num\">7.9 %</td>" in html
    console = Console(file=io.StringIO(), width=160)
    console.print(models_table(record(result)))
    out = console.file.getvalue()
    assert "Models: relative OPS" in out and "resnet50" in out
    assert "geometric mean (all rows: 12.8 %)" in out and "12.3 %" in out and "13.4 %" in out
    assert '<th colspan="2">geometric mean (all rows: 12.8 %)</th><th class="num">12.3 %</th>' \
        '<th></th><th class="num">13.4 %</th>' in html
    assert models_table(record(golden_result())) is None


def test_models_only_audit_has_no_empty_micro_table():
    result = golden_result()
    models = tuple(r for bench, ratio in HAND.items() for r in bench_pair(bench, {}, ratio))
    result = with_findings(dataclasses.replace(result, results=models, skipped=()))
    text = render_markdown(view(result))
    assert "## Models" in text and "## Relative OPS per benchmark" not in text
    html = render_html(view(result))
    assert 'id="models-table"' in html and 'id="ops-table"' not in html


def test_an_inference_only_audit_says_so_and_a_one_pair_row_says_1_pair():
    result = golden_result()
    rows = tuple(r for r in bench_pair("alexnet_infer", {}, 0.407))
    result = with_findings(dataclasses.replace(result, results=result.results + rows))
    shown = view(result)
    assert "on 1 model (geometric mean of 1 inference row)" in shown["verdict"]["text"]
    (row,) = shown["models"]
    (c,) = [c for c in compare(result) if c.bench == "alexnet_infer"]
    assert len(c.pair_ratios) == 1 and row["infer_interval"].endswith(" (1 pair)")
    assert shown["models_geomean_modes"] == {"infer": "40.7 %", "train": ""}
