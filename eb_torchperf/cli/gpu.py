"""Show the GPU part of an audit results file: configuration, GEMM against the card's
peak, CPU vs GPU µs per call, launch latency, copy bandwidths, and the GPU findings
(rules in eb_torchperf.diagnosis.rules.gpu).

  eb-torchperf gpu reports/torchperf-20261201-120000.json [--markdown FILE]

Exit status: 0, or 1 when a GPU finding is at or above --fail-on; 2 for a malformed
results file (one line names the first bad field) or an unwritable --markdown.
"""

from typing import List

from rich.table import Table

from eb_torchperf.present.terminal import PipeConsole
from eb_torchperf.present import escape
from eb_torchperf.records import safe_write
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.findings import Finding, exit_status
from eb_torchperf.present.findings_view import finding_view
from eb_torchperf.present.terminal import format_ratio, print_finding
from eb_torchperf.present.gpusummary import dispatch_rows, gemm_rows, gpu_config_rows, rate_rows
from eb_torchperf.errors import SchemaError
from eb_torchperf.records.measurements import AuditResult, load_results
from eb_torchperf.cli.report import FAIL_LEVELS
from eb_torchperf.diagnosis.rules import gpu as gpu_rules
from eb_torchperf.workflows import pipeline


def add_arguments(parser) -> None:
    parser.add_argument("results", help="results JSON written by `eb-torchperf audit`")
    parser.add_argument("--markdown", metavar="FILE", help="also write the tables as Markdown")
    parser.add_argument("--fail-on", default="error", choices=FAIL_LEVELS,
                        help="exit 1 when a GPU finding is at least this severe (default "
                             "error; as in audit and report)")


def analyse(result: AuditResult) -> Analysis:
    """The pipeline's analysis step restricted to eb_torchperf.diagnosis.rules.gpu
    (findings most severe first)."""
    return pipeline.analyse(result, rules=gpu_rules.RULES)


def gpu_findings(result: AuditResult) -> List[Finding]:
    """Every finding of the GPU rules for `result`, most severe first."""
    return list(analyse(result).findings)


def _pct(value) -> str:
    return format_ratio(value) or "—"


def _num(value, digits=1) -> str:
    return "—" if value is None else "%.*f" % (digits, value)


def tables(result: AuditResult, analysis: Analysis) -> List[tuple]:
    """(title, header, rows of strings) for each GPU table of `result`.

    Args:
        analysis: the pipeline's analysis of `result` (analyse).
    """
    name, peak = analysis.gpu["device"], analysis.gpu["peak"]
    with_ref = result.reference is not None
    config = [(r.label, r.target) + ((r.reference,) if with_ref else ())
              for r in gpu_config_rows(result.target, result.reference)]
    gemm = [(g.label, _num(g.tflops), _num(g.burst_tflops), _num(g.peak_tflops),
             _pct(g.of_peak), _pct(g.of_best)) for g in gemm_rows(analysis)]
    dispatch = [(d.label, d.side, _num(d.cpu_us), _num(d.gpu_us), _num(d.wall_us),
                 _num(d.ratio, 2), d.bound) for d in dispatch_rows(analysis)]
    rates = [(r.label, r.unit, _num(r.target, 2), _num(r.reference, 2))
             for r in rate_rows(analysis)]
    return [
        ("GPU configuration", ("setting", "target") + (("reference",) if with_ref else ()),
         config),
        ("GEMM (target); peak: %s" % (peak[1] if peak else "unknown device %s" % name),
         ("benchmark", "TFLOP/s (median)", "burst TFLOP/s (best sample)", "peak TFLOP/s",
          "burst of peak", "burst of best measured"), gemm),
        ("CPU vs GPU time per call", ("benchmark", "side", "CPU µs", "GPU µs", "wall µs",
                                      "CPU/GPU", "bound"), dispatch),
        ("Latency and bandwidth", ("benchmark", "unit", "target", "reference"), rates),
    ]


def markdown(findings: List[Finding], shown: List[tuple]) -> str:
    """The GPU tables (`tables`) and findings as GitHub Markdown."""
    lines = []
    for title, header, rows in shown:
        if not rows:
            continue
        lines += ["### " + escape.markdown_text(title), "",
                  "| " + " | ".join(map(escape.markdown_text, header)) + " |",
                  "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(map(escape.markdown_text, row)) + " |"
                  for row in rows] + [""]
    lines += ["### GPU findings", ""]
    for f in findings:
        view = finding_view(f)
        evidence = "; ".join("%s = %s" % (e["name"], e["value"]) for e in view["facts"])
        texts = tuple(map(escape.markdown_text, (f.rule_id, f.severity, f.title, evidence,
                                                 view["remedy"])))
        lines.append("- **%s** (%s): %s. Evidence: %s. Remedy: %s Source: %s"
                     % (texts + (escape.markdown_link(f.source),)))
    if not findings:
        lines.append("none")
    return "\n".join(lines) + "\n"


def _gpu_facts(result: AuditResult, path) -> dict:
    """The target's `gpu` facts (a dict; {} where the probe recorded none).

    Raises:
        SchemaError: no target probe, or `gpu` facts that are not an object.
    """
    if result.target is None:
        raise SchemaError("%s: malformed results file: no target probe" % path)
    gpu = (result.target.facts or {}).get("gpu") or {}
    if not isinstance(gpu, dict):
        raise SchemaError("%s: malformed results file: target facts 'gpu' is %s, not an "
                          "object" % (path, type(gpu).__name__))
    return gpu


def run(args) -> int:
    out = PipeConsole()
    if args.markdown:
        safe_write.refuse_protected(args.markdown, (args.results,), "--markdown")
    result = load_results(args.results)
    gpu = _gpu_facts(result, args.results)
    if not gpu.get("available"):
        out.print("GPU: none in this audit (%s)" % (gpu.get("reason") or "the probe recorded "
                                                    "no GPU facts"), highlight=False)
        return 0
    try:
        analysis = analyse(result)
        findings = list(analysis.findings)
        shown = tables(result, analysis)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # hand-edited or foreign files: a value of the wrong type deep in the facts
        raise SchemaError("%s: malformed GPU facts or results (%s: %s)"
                          % (args.results, type(exc).__name__, exc)) from None
    if not result.complete:
        out.print("INCOMPLETE RUN: %s" % (result.errors[-1].get("message", "cut short")
                                          if result.errors else "cut short"), highlight=False)
    for title, header, rows in shown:
        if not rows:
            continue
        table = Table(title=escape.rich_text(title))
        for column in header:
            table.add_column(column)
        for row in rows:
            table.add_row(*map(escape.rich_text, row))
        out.print(table)
    for f in findings:
        print_finding(out, f)
    if not findings:
        out.print("GPU findings: none", highlight=False)
    if args.markdown:
        safe_write.write_text(args.markdown, markdown(findings, shown))
    return exit_status(findings, args.fail_on)
