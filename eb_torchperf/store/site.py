"""The static HTML history (`eb-torchperf history --html DIR`): one offline page.

DIR/index.html has, per node type, the chart of relative OPS to the reference (the
stored geometric mean of each audit) per build over time (svgchart.py, inline SVG),
the audits with links to their reports and stored results, and the regressions table
(regress.py).  DIR/audits/<id>.json holds each audit's stored results document.  No
script, stylesheet or font is loaded from anywhere: the page works without network.
"""

import html
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

import sqlalchemy as sa

from eb_torchperf.present.units import format_ratio
from eb_torchperf.records import safe_write
from eb_torchperf.store.buildcheck import row_text, summary
from eb_torchperf.store.query import Filters, StoredAudit, checked, document_of, readable
from eb_torchperf.store.regress import BuildComparison, comparisons
from eb_torchperf.store.svgchart import line_chart

STYLE = """body{font-family:sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:left;font-size:13px}th{background:#eee}.slower{color:#b00;font-weight:bold}
.chart{display:block;margin:1em 0}"""


def _e(value) -> str:
    return html.escape(str(value))


def _link(out_dir: str, path: str, text: str) -> str:
    if not path:
        return ""
    target = os.path.relpath(path, out_dir) if os.path.isabs(path) else path
    return '<a href="%s">%s</a>' % (_e(target), _e(text))


def _figure(audit: StoredAudit, rows: Dict[int, list]) -> Tuple[Optional[float], str]:
    """(the audit's geometric mean of relative OPS, "") as stored; else, where no row
    decided, the geometric mean of its rows' stored estimates, marked as such."""
    if audit.geomean:
        return audit.geomean, ""
    values = [r.value for r in rows.get(audit.id, ()) if r.value and r.value > 0]
    if not values:
        return None, ""
    return math.exp(sum(map(math.log, values)) / len(values)), " (estimate: no row decided)"


def _chart(audits: Sequence[StoredAudit], node_type: str, rows: Dict[int, list]) -> str:
    labels = [a.created_utc[:16].replace("T", " ") for a in audits]
    series: Dict[str, list] = {}
    for index, audit in enumerate(audits):
        value, note = _figure(audit, rows)
        if value:
            series.setdefault(audit.build, []).append(
                (index, value, "%s, %s: %s of the reference%s (audit %d)" % (
                    audit.build, labels[index], format_ratio(value), note, audit.id)))
    if not series:
        return "<p>No audit with a geometric mean of relative OPS on this node type.</p>"
    return line_chart(series, labels, "Relative OPS to the reference per build, node type %s"
                      % (node_type or "(unknown)"))


def _audit_table(audits: Sequence[StoredAudit], out_dir: str) -> str:
    head = ("id", "started (UTC)", "build", "toolchain", "host", "CPU", "reference",
            "geo. mean", "verdict", "report", "results")
    lines = ["<table class='audits'><tr>%s</tr>" % "".join("<th>%s</th>" % h for h in head)]
    for a in audits:
        cells = (a.id, a.created_utc[:19], a.build, a.toolchain or "-", a.host, a.cpu_model,
                 "torch %s" % (a.reference_version or "-"), format_ratio(a.geomean) or "-",
                 a.verdict_level or "-")
        links = (_link(out_dir, a.report_path, "report") if a.report_path else "-",
                 _link(out_dir, os.path.join(out_dir, "audits", "%d.json" % a.id), "JSON"))
        lines.append("<tr>%s%s</tr>" % ("".join("<td>%s</td>" % _e(c) for c in cells),
                                        "".join("<td>%s</td>" % l for l in links)))
    return "\n".join(lines + ["</table>"])


def _regression_table(found: Sequence[BuildComparison]) -> str:
    lines = ["<table class='regressions'><tr><th>audit</th><th>build</th><th>previous build"
             "</th><th>new / previous (geo. mean of rows)</th><th>slower rows</th>"
             "<th>summary</th></tr>"]
    for c in found:
        if c.previous is None:
            continue
        slower = "; ".join(row_text(r) for r in c.slower_rows)
        lines.append("<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td class='%s'>%s</td>"
                     "<td>%s</td></tr>" % (
                         c.audit.id, _e(c.audit.build), _e(c.previous.build),
                         _e(format_ratio(c.geomean_ratio) or "-"),
                         "slower" if slower else "", _e(slower or "none"), _e(summary(c))))
    return "\n".join(lines + ["</table>"])


def page(audits: Sequence[StoredAudit], found: Sequence[BuildComparison], out_dir: str,
         rows: Dict[int, list]) -> str:
    """The index.html text of `audits` (oldest first), their comparisons and stored rows
    (query.rows_of)."""
    body = ["<h1>eb-torchperf history</h1>",
            "<p>%d stored audits. Relative OPS: the reference (usually the upstream wheel) "
            "= 100 %%: each point is an audit's geometric mean of relative OPS (hover for "
            "details).</p>" % len(audits)]
    for node_type in sorted({a.node_type for a in audits}):
        mine = [a for a in audits if a.node_type == node_type]
        ids = {a.id for a in mine}
        body += ["<section class='node-type'><h2>Node type %s</h2>" % _e(node_type or "(unknown)"),
                 _chart(mine, node_type, rows), "<h3>Regressions between builds</h3>",
                 _regression_table([c for c in found if c.audit.id in ids]),
                 "<h3>Audits</h3>", _audit_table(mine, out_dir), "</section>"]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>eb-torchperf "
            "history</title><style>%s</style></head><body>\n%s\n</body></html>\n"
            % (STYLE, "\n".join(body)))


def _documents(engine: sa.engine.Engine, audits) -> Tuple[Dict[int, dict], List[int]]:
    """The stored document of each audit by id; the ids whose document is not JSON."""
    documents, broken = {}, []
    for audit in audits:
        try:
            documents[audit.id] = document_of(engine, audit.id)
        except ValueError:
            broken.append(audit.id)
    return documents, broken


def write_site(engine: sa.engine.Engine, filters: Filters, out_dir: str) -> Tuple[
        str, int, Tuple[int, ...]]:
    """Write DIR/index.html and DIR/audits/<id>.json; (the index's path, the number of
    audits shown, the ids of the unreadable audits skipped: query.readable).

    Raises:
        StoreError: the database cannot be read, or no audit in it is readable.
        WriteError: a file cannot be written.
    """
    audits, rows, unreadable = readable(engine, filters)
    documents, broken = _documents(engine, audits)
    audits, rows, unreadable = checked([a for a in audits if a.id in documents], rows,
                                       set(unreadable) | set(broken))
    found = comparisons(audits, rows)
    for audit in audits:
        safe_write.write_json(os.path.join(out_dir, "audits", "%d.json" % audit.id),
                              documents[audit.id])
    index = os.path.join(out_dir, "index.html")
    safe_write.write_text(index, page(audits, found, os.path.abspath(out_dir), rows))
    return index, len(audits), unreadable
