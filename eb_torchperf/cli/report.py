"""Re-render the reports of a stored audit (results JSON) and re-run the diagnosis.

The rules run again over the stored facts and measurements, so a report rendered
by a newer eb_torchperf has the newer rules' findings.  When `eb-torchperf explain`
(or `audit --explain`) left <stem>.explain.json beside the results, the findings get
its profile evidence again and the reports its "Explain" section.
"""

import pathlib

from rich.console import Console

from eb_torchperf.analysis.compare import compare
from eb_torchperf.diagnosis.diagnose import with_findings
from eb_torchperf.errors import SchemaError
from eb_torchperf.workflows.explain import explain_path, find_explain, stale_reason, with_profile_evidence
from eb_torchperf.records.findings import exit_status
from eb_torchperf.records.measurements import load_results
from eb_torchperf.present.report import parse_formats, write_reports
from eb_torchperf.present.report.render import verdict
from eb_torchperf.present.terminal import make_console, print_findings

FAIL_LEVELS = ("warning", "error", "never")


def add_common_arguments(parser, default_formats: str = "html,md") -> None:
    """--format, --out-dir, --fail-on: shared by report, compare and audit."""
    parser.add_argument("--format", default=default_formats, metavar="LIST",
                        help="comma-separated report formats: html, md, json "
                             "(default: %s)" % default_formats)
    parser.add_argument("--fail-on", choices=FAIL_LEVELS, default="error",
                        help="exit 1 when a finding is at or above this severity "
                             "(default: error)")


def add_arguments(parser) -> None:
    parser.add_argument("results", metavar="RESULTS.json", help="results of eb-torchperf audit")
    add_common_arguments(parser)
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where to write the reports (default: next to RESULTS.json)")


def print_outcome(console: Console, result, comparisons, written: dict) -> None:
    """Findings, the one-line verdict, and the report paths."""
    console.rule("Findings")
    print_findings(console, result.findings)
    console.print(verdict(result, comparisons)["text"], highlight=False, markup=False)
    for fmt, path in written.items():
        console.print("%s report: %s" % (fmt, path), highlight=False, markup=False)


def run(args) -> int:
    formats = parse_formats(args.format)
    source = pathlib.Path(args.results)
    result = load_results(source)
    comparisons = compare(result)
    result = with_findings(result, comparisons)
    try:  # a file beside the results that the user did not name: never fatal
        explained = find_explain(source)
        stale = explained and stale_reason(explained, result)
    except SchemaError as exc:
        explained, stale = None, str(exc)
    if stale:
        make_console(stderr=True).print("ignoring %s: %s" % (explain_path(source), stale),
                                        highlight=False, soft_wrap=True, markup=False)
        explained = None
    result = with_profile_evidence(result, explained)
    written = write_reports(result, args.out_dir or source.parent, formats, stem=source.stem,
                            comparisons=comparisons, explain=explained,
                            protected=(source, explain_path(source)))
    print_outcome(make_console(), result, comparisons, written)
    return exit_status(result.findings, args.fail_on)
