"""Build the report's view model: every section as display strings and row lists.

One view serves the HTML and the Markdown templates (and `compare` of two stored
runs), so both show the same numbers.  Display units and percentages are chosen
here; templates only lay out.
"""

from typing import List, Optional, Sequence

from eb_torchperf.present.configdiff import config_rows
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.findings import SEVERITIES, Finding, sort_findings
from eb_torchperf.records.measurements import AuditResult, ProbeResult, params_key
from eb_torchperf.present.findings_view import finding_view
from eb_torchperf.present.models_view import row_cells
from eb_torchperf.present.units import evidence_text
from eb_torchperf.present.report.chart import Bar, chart
from eb_torchperf.present.report.explain_view import explain_view
from eb_torchperf.present.report.tables import comparison_frame, format_params, ops_rows, pct, raw_rows
from eb_torchperf.present.report.differences_view import differences_rows
from eb_torchperf.present.host_view import host_rows, host_status, isolation_notes, only_host

SEVERITY_LABELS = {"error": "Errors", "warning": "Warnings", "info": "Information"}
MISSING = "—"


def _torch_line(probe: Optional[ProbeResult]) -> str:
    if probe is None:
        return MISSING
    return "torch %s (%s)" % (probe.fact("torch", "version") or "?", probe.python)


def verdict(analysis: Analysis) -> dict:
    """The one-line verdict: worst severity, counts, top finding, geometric mean
    (a rendering of the analysis' diagnosis.verdict.Verdict).

    Returns:
        {"level": "error" | "warning" | "info" | "ok", "text": one line}.
    """
    judged, comparisons = analysis.verdict, analysis.comparisons
    level = judged.level
    counts = ", ".join("%d %s" % (n, s + ("s" if n != 1 and s != "info" else ""))
                       for s, n in judged.counts.items())
    speed = {
        "measured": lambda: (models_speed(analysis) if analysis.geomeans.get("models")
                             else "target at %s of the reference (geometric mean of %s%s)"
                             % (pct(judged.geomean), _benchmarks(judged.benchmarks),
                                "; %d inconclusive" % judged.inconclusive
                                if judged.inconclusive else "")),
        "inconclusive": lambda: "%d of %d benchmark%s inconclusive (95 %% interval wider "
                                "than ±%.0f %% or not clear of the A/A floor)" % (
                                    judged.inconclusive, len(comparisons),
                                    "" if len(comparisons) == 1 else "s",
                                    100 * analysis.inconclusive_half_width),
        "no-pair": lambda: "no benchmark measured on both sides",
        "nothing-measured": lambda: "nothing measured (%s)" % (
            judged.problem if judged.complete and judged.problem else
            "%d benchmark%s skipped" % (judged.skipped, "" if judged.skipped == 1 else "s")),
        "no-reference": lambda: "no reference measured: absolute rates only",
    }[judged.speed]()
    status = (level.upper() if level not in ("ok", "info")  # never OK undecided (issue 26)
              else "UNDECIDED" if judged.speed == "inconclusive" else "OK")
    status, host = host_status(status, judged.findings)
    if judged.complete and judged.problem:  # benchmarks failed: nothing measured
        status = "FAILED"
    if not judged.complete:
        # a cut-short run is never "OK": say so first, with the cause
        status = "INCOMPLETE RUN (%s)" % (judged.problem or "cut short")
        if level not in ("ok", "info"):
            status += ", " + level.upper()
    parts = ["%s: %s" % (status, speed)]
    parts.append(counts or "no findings")
    if judged.findings and level in ("error", "warning") and not only_host(judged.findings):
        parts.append("top finding: %s" % judged.findings[0].title)
    if host:
        parts.append(host)
    return {"level": level, "text": "; ".join(parts) + "."}


def models_speed(analysis: Analysis) -> str:
    """The verdict's speed clause when models were run: the models' geometric mean
    first (the figure sites quote, TorchBench-like), then the micro-suite's."""
    measured = [c for c in analysis.models if c.relative_ops is not None]
    names = {analysis.model_benches[c.bench][0] for c in measured}
    modes = {analysis.model_benches[c.bench][1] for c in measured}
    kinds = " and ".join(label for mode, label in (("infer", "inference"), ("train", "training"))
                         if mode in modes)
    text = "target at %s of the reference on %d model%s (geometric mean of %d %s row%s)" % (
        pct(analysis.geomeans["models"]), len(names), "" if len(names) == 1 else "s",
        len(measured), kinds, "" if len(measured) == 1 else "s")
    micro_geo = analysis.geomeans.get("micro")
    if micro_geo is not None:
        text += "; micro-suite %s (geometric mean of %s)" % (
            pct(micro_geo), _benchmarks(sum(c.relative_ops is not None for c in analysis.micro)))
    return text


def _benchmarks(count: int) -> str:
    """"1 benchmark", "16 benchmarks"."""
    return "%d benchmark%s" % (count, "" if count == 1 else "s")


def _display(value) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%.4g" % value
    if isinstance(value, dict):
        return ", ".join("%s: %s" % (k, _display(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        joiner = "; " if any(isinstance(v, dict) for v in value) else ", "
        return joiner.join(_display(v) for v in value)
    return str(value)


def findings_groups(findings: Sequence[Finding]) -> List[dict]:
    """Non-empty groups by severity, most severe first: {severity, label, entries}."""
    ordered = sort_findings(findings)
    return [{"severity": s, "label": SEVERITY_LABELS[s],
             "entries": [finding_view(f) for f in ordered if f.severity == s]}
            for s in reversed(SEVERITIES) if any(f.severity == s for f in ordered)]


def _chart(comparisons: Sequence, fractions: dict) -> Optional[dict]:
    bars = [Bar("%s %s" % (c.bench, format_params(c.params)), c.relative_ops, c.ci_low, c.ci_high)
            for c in comparisons if c.relative_ops is not None]
    if bars:
        return chart(bars, "Relative OPS (reference = 100 %) with 95 % interval", "reference")
    bars = [Bar("%s %s" % (c.bench, format_params(c.params)),
                fractions[(c.bench, params_key(c.params))][0])
            for c in comparisons if (c.bench, params_key(c.params)) in fractions]
    return chart(bars, "Rate as a fraction of nominal peak (GFLOP/s) or of measured "
                       "bandwidth (GB/s)", "peak")


def _pools_text(probe: ProbeResult, runtime: Optional[dict] = None) -> str:
    pools = probe.fact("threadpools", "pools") or []
    return "; ".join("%s %s%s: %s threads" % (
        p.get("user_api"), p.get("internal_api"),
        " (%s)" % p["threading_layer"] if p.get("threading_layer") else "",
        p.get("num_threads")) for p in pools) or MISSING


def _cpu_text(probe: ProbeResult, runtime: dict) -> str:
    mhz, source = runtime.get("clock") or (None, "")
    clock = "%.0f MHz (%s)" % (mhz, source) if mhz else "clock unknown"
    return "%s %s, family %s, %s" % (probe.fact("cpu", "vendor") or "", probe.fact("cpu", "model")
                                     or "", probe.fact("cpu", "family") or "?", clock)


#: label -> getter(ProbeResult, the side's Analysis.runtime) -> display string, for the
#: runtime section.
RUNTIME_ROWS = (
    ("python", lambda p, rt: "%s (%s)" % (p.fact("python", "executable") or p.python,
                                      p.fact("python", "version") or "?")),
    ("torch", lambda p, rt: "%s %s" % (p.fact("torch", "version"), p.fact("torch", "file"))),
    ("intra-op / inter-op threads", lambda p, rt: "%s / %s" % (
        p.fact("torch", "intra_op_threads"), p.fact("torch", "interop_threads"))),
    ("omp_get_max_threads / mkl_get_max_threads", lambda p, rt: "%s / %s" % (
        p.parallel.get("omp_max_threads", MISSING), p.parallel.get("mkl_max_threads", MISSING))),
    ("usable cores", lambda p, rt: "%s (affinity %s, cgroup CPU quota %s)" % tuple(
        evidence_text(v) for v in rt["cores"].values())),
    ("logical cores", lambda p, rt: _display(p.fact("cpu", "logical_cores"))),
    ("CPU", _cpu_text),
    ("CPU flags", lambda p, rt: " ".join(p.fact("cpu", "flags") or ()) or MISSING),
    ("frequency governor", lambda p, rt: _display(p.fact("cpu", "governor"))),
    ("thread pools (threadpoolctl)", _pools_text),
    ("loaded libraries", lambda p, rt: ", ".join(p.fact("mapped_libraries", "libraries") or ())
     or MISSING),
    ("flush-to-zero supported", lambda p, rt: _display(p.fact("torch", "flush_denormal_supported"))),
    ("probe errors", lambda p, rt: "; ".join("%s: %s" % (e.get("name"), e.get("message"))
                                         for e in p.facts.get("errors") or ()) or "none"),
)


def runtime_rows(target: Optional[ProbeResult], reference: Optional[ProbeResult],
                 runtime: dict) -> List[dict]:
    """Threads, affinity, CPU, pools, libraries and environment variables, side by side
    (`runtime`: Analysis.runtime, each side's clock and cores)."""
    if target is None:
        return []
    rows = [{"label": label, "target": getter(target, runtime["target"]),
             "reference": getter(reference, runtime["reference"])
             if reference is not None else ""}
            for label, getter in RUNTIME_ROWS]
    env_t = dict(target.facts.get("env") or {})
    env_r = dict((reference.facts.get("env") or {}) if reference is not None else {})
    for name in sorted(set(env_t) | set(env_r)):
        rows.append({"label": "$" + name, "target": env_t.get(name, "not set"),
                     "reference": env_r.get(name, "not set") if reference is not None else ""})
    return rows


def peak_note(fractions: dict) -> str:
    """One sentence saying what "% of peak" is measured against ("" without peaks)."""
    peaks = [p for _, p in fractions.values() if p.unit == "GFLOP/s"]
    flops = sorted({p.basis for p in peaks if not p.source})
    gpu = sorted({p.basis for p in peaks if p.source})
    parts = []
    if flops:
        parts.append("GFLOP/s against the nominal fp32 peak (%s; with a base clock, turbo can "
                     "exceed 100 %%)" % "; ".join(flops))
    if gpu:
        parts.append("CUDA GEMM against the card's dense peak (%s, %s; median rate: the card "
                     "lowers its clock at its power cap)"
                     % ("; ".join(gpu), ", ".join(sorted({p.source for p in peaks if p.source}))))
    if any(p.unit == "GB/s" for _, p in fractions.values()):
        parts.append("GB/s against the bandwidth add_bandwidth measured")
    return ("% of peak: " + ", ".join(parts) + ".") if parts else ""


def _pairs_text(result: AuditResult) -> str:
    """How many worker pairs measured the rows: '3 worker pair(s)', or '3–8 worker pairs per
    row' when rows short of precision got extra pairs (RunnerOptions.max_pairs)."""
    per_row = {}
    for r in result.results:
        key = (r.bench, params_key(r.params))
        per_row.setdefault(key, set()).add(r.pair)
    counts = sorted({len(pairs) for pairs in per_row.values()})
    if len(counts) > 1:
        return "%d–%d worker pairs per row" % (counts[0], counts[-1])
    return "%s worker pair(s)" % (counts[0] if counts else result.options.get("pairs", "?"))


def _conditions_text(conditions: dict) -> str:
    """How the audit measured (AuditResult.conditions, issue 26): worker mode, allowed
    CPUs, how busy the host was."""
    mode = conditions.get("worker_mode")
    parts = ["workers forked from one zygote per side" if mode == "fork" else
             "workers spawned (%s)" % conditions.get("spawn_reason", "fresh interpreters")]
    if conditions.get("allowed_cpus"):
        parts.append("%s allowed CPUs" % conditions["allowed_cpus"])
    if conditions.get("other_cpu_median") is not None:
        parts.append("other processes used %.0f %% of them (median, max %.0f %%)%s" % (
            100 * conditions["other_cpu_median"], 100 * conditions.get("other_cpu_max", 0),
            ": BUSY HOST" if conditions.get("busy") else ""))
    return ", ".join(parts)


def _meta(result: AuditResult) -> List[dict]:
    items = [("target", _torch_line(result.target)),
             ("reference", _torch_line(result.reference) if result.reference else "none"),
             ("host", result.host or MISSING), ("started (UTC)", result.created_utc or MISSING),
             ("suite", "%s, %s" % (result.suite, _pairs_text(result))),
             ("wall time", "%.0f s" % result.wall_s),
             ("complete", "yes" if result.complete else "no (cut short)"),
             ("eb_torchperf", result.tool_version or MISSING)]
    if result.conditions:  # how it was measured (schema 3, issue 26)
        items.insert(6, ("measured", _conditions_text(result.conditions)))
    return [{"label": k, "value": v} for k, v in items]


def skipped_rows(skipped) -> list:
    """One row per skipped benchmark and reason, its sides joined ("target, reference"):
    a benchmark neither side can run is listed once, not once per side."""
    rows = {}
    for s in skipped:
        params = format_params(s.get("params") or {})
        key = (s.get("bench", ""), params, s.get("reason", ""))
        row = rows.setdefault(key, {"bench": key[0], "params": params, "side": "",
                                    "reason": key[2], "sides": []})
        if s.get("side", "") not in row["sides"]:
            row["sides"].append(s.get("side", ""))
            row["side"] = ", ".join(row["sides"])
    return [{k: v for k, v in row.items() if k != "sides"} for row in rows.values()]


def build_view(result: AuditResult, analysis: Analysis, title: Optional[str] = None,
               notes: Sequence[str] = (), explain=None) -> dict:
    """The whole report as a dict of display strings and row lists.

    Args:
        result: the audit, findings included (the analysis' findings).
        analysis: what the pipeline computed (records.analysis.Analysis).
        title: heading; default names the target.
        notes: extra lines shown under the verdict (e.g. the unpaired-compare caveat).
        explain: the explain document of this audit (explain.find_explain), whose
            profile diff and remedy trials become the "Explain" section; None: no section.
    """
    with_reference = analysis.with_reference
    models_table = [row_cells(r) for r in analysis.model_rows] if with_reference else []
    shown = list(analysis.shown)  # model rows: in the Models table
    fractions = analysis.peak_fractions
    frame = comparison_frame(shown, fractions)
    rows = config_rows(result.target, result.reference) if result.target is not None else []
    geo = analysis.geomeans.get("shown")
    model_geo = analysis.geomeans.get("models") if models_table else None
    return {
        "title": title or "PyTorch performance audit: %s" % _torch_line(result.target),
        "verdict": verdict(analysis), "notes": list(notes), "meta": _meta(result),
        "findings": findings_groups(result.findings), "with_reference": with_reference,
        "models": models_table, "models_geomean": pct(model_geo) if model_geo else "",
        "models_geomean_modes": {mode: pct(analysis.geomeans.get(mode))
                                 if analysis.geomeans.get(mode) is not None else ""
                                 for mode in ("infer", "train")},
        "ops": ops_rows(frame), "geomean": pct(geo) if geo is not None else "",
        "chart": _chart(shown, fractions),
        "explain": explain_view(explain) if explain is not None else None,
        "peak_note": peak_note(fractions),
        "config": [r._asdict() for r in rows],
        "differences": differences_rows(analysis.differences,
                                        [f.rule_id for f in result.findings]),
        "host": host_rows(result.target), "host_notes": isolation_notes(result.target),
        "runtime": runtime_rows(result.target, result.reference, analysis.runtime),
        "raw": raw_rows(result),
        "skipped": skipped_rows(result.skipped),
        "errors": [{"side": str(e.get("side") or ""), "bench": str(e.get("bench") or ""),
                    "message": str(e.get("message") or "")} for e in result.errors],
    }
