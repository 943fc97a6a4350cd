"""Re-render the reports of a stored audit (results JSON) and re-run the diagnosis.

The rules run again over the stored facts and measurements, so a report rendered
by a newer eb_torchperf has the newer rules' findings.  When `eb-torchperf explain`
(or `audit --explain`) left <stem>.explain.json beside the results, the findings get
its profile evidence again and the reports its "Explain" section.
"""

from rich.console import Console

from eb_torchperf.workflows import pipeline
from eb_torchperf.workflows.request import AuditRequest
from eb_torchperf.present.formats import parse_formats
from eb_torchperf.present.terminal import differences_table, make_console, print_findings

from eb_torchperf.records.findings import FAIL_LEVELS  # noqa: E402,F401  (re-exported)


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


def print_outcome(console: Console, result, analysis, written: dict) -> None:
    """Differences of the two sides, findings, the one-line verdict, the report paths
    (all from `analysis`, the pipeline's records.analysis.Analysis)."""
    from eb_torchperf.present.report.render import verdict  # pandas: once there is a result
    from eb_torchperf.present.report.differences_view import differences_rows
    diffs = differences_rows(analysis.differences, [f.rule_id for f in result.findings])
    if diffs:
        console.print(differences_table(diffs))
    from eb_torchperf.present.host_view import host_rows, host_table, isolation_notes
    host = host_table(host_rows(result.target), isolation_notes(result.target))
    if host is not None:
        console.print(host)
    console.rule("Findings")
    print_findings(console, result.findings)
    console.print(verdict(analysis)["text"], highlight=False, markup=False)
    for fmt, path in written.items():
        console.print("%s report: %s" % (fmt, path), highlight=False, markup=False)


def run(args) -> int:
    formats = parse_formats(args.format)
    err = make_console(stderr=True)
    request = AuditRequest(results=args.results, reuse_explain=True, out_dir=args.out_dir,
                           formats=formats, fail_on=args.fail_on)
    outcome = pipeline.run(request, pipeline.Display(
        log=lambda msg: err.print(msg, highlight=False, soft_wrap=True, markup=False)))
    print_outcome(make_console(), outcome.result, outcome.analysis, outcome.written)
    return outcome.status
