"""Show the GPU part of an audit results file: configuration, GEMM against the card's
peak, CPU vs GPU µs per call, launch latency, copy bandwidths, and the GPU findings
(rules in eb_torchperf.diagnosis.rules.gpu).

  eb-torchperf gpu reports/torchperf-20261201-120000.json [--markdown FILE]

Exit status: 0, or 1 when a GPU finding is at or above --fail-on; 2 for a malformed
results file (one line names the first bad field) or an unwritable --markdown.
"""

from typing import List, Optional, Sequence, Tuple

from rich.table import Table

from eb_torchperf.present.terminal import PipeConsole
from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.present import escape
from eb_torchperf.records import safe_write
from eb_torchperf.records.findings import Finding, exit_status
from eb_torchperf.diagnosis.peak import gpu_peak_for
from eb_torchperf.present.gpusummary import (dispatch_rows, device_name, gemm_rows, gpu_config_rows,
                         rate_rows)
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


def analyse(result: AuditResult) -> Tuple[Tuple[Comparison, ...], List[Finding]]:
    """(comparisons, the findings of the GPU rules, most severe first): the pipeline's
    analysis step restricted to eb_torchperf.diagnosis.rules.gpu."""
    comparisons, findings = pipeline.analyse(result, rules=gpu_rules.RULES)
    return comparisons, list(findings)


def gpu_findings(result: AuditResult) -> List[Finding]:
    """Every finding of the GPU rules for `result`, most severe first."""
    return analyse(result)[1]


def _evidence(value) -> str:
    """An evidence value for display (present/units.evidence_text)."""
    from eb_torchperf.present.units import evidence_text
    return evidence_text(value)


def _pct(value) -> str:
    return "—" if value is None else "%.1f %%" % (100 * value)


def _num(value, digits=1) -> str:
    return "—" if value is None else "%.*f" % (digits, value)


def tables(result: AuditResult, comparisons: Optional[Sequence[Comparison]] = None
           ) -> List[tuple]:
    """(title, header, rows of strings) for each GPU table of `result`.

    Args:
        comparisons: analysis.compare(result), computed when None.
    """
    if comparisons is None:
        comparisons = pipeline.analyse(result, rules=())[0]
    name = device_name(result.target)
    peak = gpu_peak_for(name)
    with_ref = result.reference is not None
    config = [(r.label, r.target) + ((r.reference,) if with_ref else ())
              for r in gpu_config_rows(result.target, result.reference)]
    gemm = [(g.label, _num(g.tflops), _num(g.burst_tflops), _num(g.peak_tflops),
             _pct(g.of_peak), _pct(g.of_best)) for g in gemm_rows(comparisons, name)]
    dispatch = [(d.label, d.side, _num(d.cpu_us), _num(d.gpu_us), _num(d.wall_us),
                 _num(d.ratio, 2), d.bound) for d in dispatch_rows(comparisons)]
    rates = [(r.label, r.unit, _num(r.target, 2), _num(r.reference, 2))
             for r in rate_rows(comparisons)]
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


def markdown(result: AuditResult, findings: List[Finding],
             shown: Optional[List[tuple]] = None) -> str:
    """The GPU tables (`tables(result)` when None) and findings as GitHub Markdown."""
    lines = []
    for title, header, rows in (tables(result) if shown is None else shown):
        if not rows:
            continue
        lines += ["### " + escape.markdown_text(title), "",
                  "| " + " | ".join(map(escape.markdown_text, header)) + " |",
                  "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(map(escape.markdown_text, row)) + " |"
                  for row in rows] + [""]
    lines += ["### GPU findings", ""]
    for f in findings:
        evidence = "; ".join("%s = %s" % (k, _evidence(v)) for k, v in f.evidence.items())
        texts = tuple(map(escape.markdown_text, (f.rule_id, f.severity, f.title, evidence)))
        lines.append("- **%s** (%s): %s. Evidence: %s. Source: %s"
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
        comparisons, findings = analyse(result)
        shown = tables(result, comparisons)
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
        out.print("[bold]%s[/bold] %s: %s" % tuple(
            map(escape.rich_text, (f.severity.upper(), f.rule_id, f.title))))
        for key, value in f.evidence.items():
            out.print("    %s: %s" % (key, _evidence(value)), highlight=False)
        out.print("    advice: %s\n    source: %s" % (f.advice, f.source), highlight=False)
    if not findings:
        out.print("GPU findings: none", highlight=False)
    if args.markdown:
        safe_write.write_text(args.markdown, markdown(result, findings, shown))
    return exit_status(findings, args.fail_on)
