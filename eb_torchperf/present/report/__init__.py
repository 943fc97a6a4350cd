"""Reports of an audit: HTML, Markdown and JSON from one view model.

`write_reports(result, out_dir, formats=("html", "md", "json"), stem=None)` is the
entry point for the CLI and the EasyBuild hook; `build_view` + `render_html` /
`render_markdown` for callers that need the text.
"""

from eb_torchperf.present.report.output import FORMATS, parse_formats, render_html, render_json, render_markdown, write_reports
from eb_torchperf.present.report.render import build_view

__all__ = ["FORMATS", "build_view", "parse_formats", "render_html", "render_json",
           "render_markdown", "write_reports"]
