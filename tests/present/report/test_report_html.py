"""HTML report: autoescaped, self-contained, chart bars match the comparisons."""

import dataclasses
import re

from eb_torchperf.analysis.compare import compare
from testdata import view, with_findings
from eb_torchperf.records.findings import Finding
from eb_torchperf.present.report import render_html

from auditcases import golden_result


def test_finding_text_is_autoescaped():
    nasty = Finding("x-rule", "error", "<script>alert(1)</script>", {"k": "<img src=x>"},
                    "a & b", "https://example.org/?a=1&b=2")
    html = render_html(view(dataclasses.replace(golden_result(), findings=(nasty,))))
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="https://example.org/?a=1&amp;b=2"' in html


def test_page_is_self_contained():
    html = render_html(view(with_findings(golden_result())))
    assert not re.search(r"<script|<link|<iframe|@import|\ssrc=", html)
    assert html.count("<svg") == 1


def test_one_bar_per_compared_benchmark_with_its_interval():
    result = golden_result()
    html = render_html(view(result))
    rows = [c for c in compare(result) if c.relative_ops is not None]
    assert len(re.findall(r'<rect class="bar ', html)) == len(rows)
    assert len(re.findall(r'<line class="ci"', html)) == 3 * sum(c.ci_low is not None for c in rows)
