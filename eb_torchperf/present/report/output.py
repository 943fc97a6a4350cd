"""Render the report view with Jinja2 (HTML, Markdown) and write the files.

Both environments use StrictUndefined, so a template that names a missing field
fails in tests instead of printing nothing.  HTML is autoescaped.  Markdown has its
own escaping (eb_torchperf.escape), applied to every `{{ }}` value through Jinja's
`finalize`; the `code`, `bold` and `link` filters return text that is already escaped.
"""

import json
import pathlib
from typing import Dict, Optional, Sequence

import jinja2

from eb_torchperf.present import escape
from eb_torchperf.errors import WriteError
from eb_torchperf.records import safe_write
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.present.report.render import build_view

from eb_torchperf.present.formats import (FORMATS, SUFFIXES,  # noqa: F401  (re-exported)
                                          parse_formats)



class MdText(str):
    """Markdown that is already escaped (output of the code/bold/link filters)."""


def md_escape(value) -> str:
    """Jinja `finalize` of the Markdown environment: every `{{ }}` value as literal
    Markdown text (escape.markdown_text), except the filters' already escaped output."""
    if isinstance(value, MdText):
        return value
    return escape.markdown_text(value)


def md_code(value) -> MdText:
    """The `code` filter: an inline code span (escape.markdown_code)."""
    return MdText(escape.markdown_code(value))


def md_bold(value) -> MdText:
    """The `bold` filter: bold literal text."""
    return MdText("**%s**" % escape.markdown_text(value))


def md_link(value) -> MdText:
    """The `link` filter: an autolink for http(s) URLs, literal text otherwise."""
    return MdText(escape.markdown_link(value))


def _environment(markdown: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("eb_torchperf.present.report", "templates"),
        undefined=jinja2.StrictUndefined, autoescape=not markdown, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True,
        finalize=md_escape if markdown else None)
    env.filters.update(code=md_code, bold=md_bold, link=md_link)
    return env


def render_html(view: dict) -> str:
    """The self-contained HTML page (inline CSS and SVG, no scripts, no network)."""
    return _environment(markdown=False).get_template("report.html.j2").render(**view)


def render_markdown(view: dict) -> str:
    """GitHub-flavoured Markdown (tables, <details> for raw measurements)."""
    return _environment(markdown=True).get_template("report.md.j2").render(**view)


def render_json(result: AuditResult, record: Analysis) -> str:
    """The results document itself (schema-versioned), findings and the analysis
    section of `record` (the same analysis the HTML and Markdown reports show)."""
    from eb_torchperf.present.analysis_doc import analysis
    return json.dumps(result.to_document(analysis(result, record)), indent=1,
                      default=str) + "\n"


def default_stem(result: AuditResult) -> str:
    """"torchperf-20261130-174900" from the audit's start time, else "torchperf"."""
    digits = "".join(ch for ch in result.created_utc[:19] if ch.isdigit())
    return "torchperf-%s-%s" % (digits[:8], digits[8:14]) if len(digits) >= 14 else "torchperf"


def write_reports(result: AuditResult, analysis: Analysis, out_dir,
                  formats: Sequence[str] = FORMATS, stem: Optional[str] = None,
                  title: Optional[str] = None, notes: Sequence[str] = (),
                  explain=None, protected: Sequence = ()) -> Dict[str, pathlib.Path]:
    """Write the report of `result` in each format into `out_dir`.

    Args:
        result: the audit, with findings (the analysis' findings).
        analysis: what the pipeline computed (records.analysis.Analysis); every
            format shows it.
        out_dir: folder (created if missing).
        formats: subset of FORMATS.
        stem: file name without suffix (default: default_stem(result)).
        title, notes: passed to build_view (the compare command uses them).
        explain: the audit's explain document (explain.find_explain(results path)):
            adds the "Explain: profile diff and remedy trials" section to HTML and
            Markdown; the JSON report stays the results document alone.
        protected: files never to be written over (the results JSON, the input): a
            report whose name is one of them is named <stem>.report<suffix> instead.

    Returns:
        format -> path written.

    Raises:
        ConfigError: an unknown format.
        WriteError: the folder or a file cannot be written.
    """
    parse_formats(",".join(formats))
    folder = pathlib.Path(out_dir)
    try:
        safe_write.make_folder(folder)
    except WriteError as exc:
        raise WriteError("cannot write reports into %s: %s" % (folder, exc)) from None
    stem = stem or default_stem(result)
    view = (build_view(result, analysis, title, notes, explain)
            if set(formats) - {"json"} else None)
    renderers = {"html": lambda: render_html(view), "md": lambda: render_markdown(view),
                 "json": lambda: render_json(result, analysis)}
    written = {}
    for fmt in formats:
        path = folder / (stem + SUFFIXES[fmt])
        if any(safe_write.same_file(path, other) for other in protected):
            path = folder / (stem + ".report" + SUFFIXES[fmt])
            safe_write.refuse_protected(path, protected, "the %s report" % fmt)
        safe_write.write_text(path, renderers[fmt]())
        written[fmt] = path
    return written
