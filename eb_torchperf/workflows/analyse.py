"""The analysis step of the pipeline: the one place that compares, diffs, diagnoses and
judges an audit.

`analyse(result)` runs analysis.compare.compare, diagnosis.differences.differences,
the diagnosis rules and diagnosis.verdict.assess once each and returns the record
(records.analysis.Analysis) that every later step receives.  tests/architecture checks
that no other module calls those functions (`compare_trial` compares a remedy trial's
own run, for the explain stage).
"""

import dataclasses
from typing import Callable, Optional, Sequence

from eb_torchperf.analysis.compare import AA_FLOOR, compare, geomean_relative_ops
from eb_torchperf.analysis.model_rows import mode_geomeans, model_rows, split
from eb_torchperf.analysis.precision import INCONCLUSIVE_HALF_WIDTH
from eb_torchperf.diagnosis.differences import differences
from eb_torchperf.diagnosis.evidence import cores_evidence
from eb_torchperf.diagnosis.peak import clock_mhz, device_name, gpu_peak_for, peak_fractions
from eb_torchperf.diagnosis.rules.gpu import CPU_BOUND_RATIO
from eb_torchperf.diagnosis.rules.scope import row_scope
from eb_torchperf.diagnosis.verdict import assess
from eb_torchperf.probe.suite_models import MODEL_ROWS
from eb_torchperf.records.analysis import Analysis
from eb_torchperf.records.measurements import AuditResult


def analyse(result: AuditResult, unpaired: bool = False, keep_findings: bool = False,
            rules: Optional[Sequence[Callable]] = None, fail_on: str = "error",
            minimum: Optional[float] = None) -> Analysis:
    """Compare the sides, diagnose and judge `result`, once.

    Args:
        result: the audit (its stored findings are used only with keep_findings).
        unpaired: `result` combines two stored runs (analysis.unpaired.combine_runs):
            compared by analysis.unpaired.unpaired_comparisons, not analysis.compare.
        keep_findings: findings stored in `result` win over a new diagnosis.
        rules: diagnosis rule functions (default: all; `gpu` passes the GPU rules).
        fail_on, minimum: the verdict's fail level and minimum geometric mean
            (diagnosis.verdict.assess).
    """
    from eb_torchperf.diagnosis.diagnose import diagnose
    from eb_torchperf.analysis.unpaired import unpaired_comparisons
    comparisons = tuple(unpaired_comparisons(result) if unpaired else compare(result))
    diffs = tuple(differences(result.target, result.reference))
    if keep_findings and result.findings:
        findings = tuple(result.findings)
    else:
        findings = tuple(diagnose(result, comparisons, rules, diffs=diffs))
    verdict = assess(dataclasses.replace(result, findings=findings), comparisons, fail_on,
                     minimum)
    return _record(result, comparisons, diffs, findings, verdict, unpaired)


def compare_trial(result: AuditResult, aa_floor: float = AA_FLOOR) -> tuple:
    """The comparisons of a remedy trial's own run (the explain stage's "after"; the
    audit itself is compared once, by analyse)."""
    return tuple(compare(result, aa_floor))


def _record(result: AuditResult, comparisons, diffs, findings, verdict,
            unpaired: bool) -> Analysis:
    with_reference = (result.reference is not None
                      or any(c.reference is not None for c in comparisons))
    models, micro = split(comparisons)
    rows = tuple(model_rows(models))
    shown = micro if with_reference and rows else list(comparisons)
    name = device_name(result.target)
    return Analysis(
        comparisons=comparisons, differences=diffs, findings=findings, verdict=verdict,
        with_reference=with_reference, model_rows=rows,
        model_benches={c.bench: MODEL_ROWS[c.bench] for c in models},
        geomeans=dict(all=geomean_relative_ops(comparisons), shown=geomean_relative_ops(shown),
                      models=geomean_relative_ops(models), micro=geomean_relative_ops(micro),
                      **mode_geomeans(models)),
        peak_fractions=peak_fractions(shown, result.target),
        families={c.bench: row_scope(c.bench) for c in comparisons},
        runtime={side: {"clock": clock_mhz((probe.facts or {}).get("cpu") or {}),
                        "cores": cores_evidence(probe)}
                 for side, probe in (("target", result.target), ("reference", result.reference))
                 if probe is not None},
        gpu={"device": name, "peak": gpu_peak_for(name), "cpu_bound_ratio": CPU_BOUND_RATIO},
        aa_floor=AA_FLOOR, inconclusive_half_width=INCONCLUSIVE_HALF_WIDTH, unpaired=unpaired)
