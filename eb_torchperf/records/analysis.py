"""The analysis of one audit, computed once by the pipeline and handed on.

`workflows.analyse.analyse` builds one `Analysis` per audit (compare, differences,
diagnose, assess each run once there); saving (the results document's `analysis`
section), every output format, the site check, fleet gathering, the ReFrame metrics
and the shells only receive it.  A stored results file loads back into the same record
through that one builder (`records.measurements.load_results` maps old schema
versions forward; the analysis is recomputed from the raw samples, never trusted on
input).

The record holds the objects of the stages to its right (analysis.compare.Comparison,
diagnosis.differences.Difference, diagnosis.verdict.Verdict, ...) without importing
them: records/ sits left of those layers.  Fields added to those classes travel with no
change here; `row_json` serialises a Comparison field by field (dataclasses.asdict).
"""

import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from eb_torchperf.records.findings import Finding, sort_findings


@dataclasses.dataclass(frozen=True)
class Analysis:
    """What the pipeline computed for one audit.

    Attributes:
        comparisons: analysis.compare.Comparison per benchmark row, in measurement order
            (or analysis.unpaired's for two stored runs).
        differences: diagnosis.differences.Difference between the two sides.
        findings: every finding, most severe first (records.findings.Finding).
        verdict: diagnosis.verdict.Verdict under the request's fail level and minimum.
        with_reference: a reference side was measured (by the audit or a stored run).
        model_rows: analysis.model_rows.ModelRow per (model, device).
        model_benches: bench -> (model, mode, device) for the models suite's rows
            (probe.suite_models.MODEL_ROWS entries of the rows measured).
        geomeans: geometric means of relative OPS (1.0 = the reference; None without):
            "all" rows, "shown" (the rows of the relative-OPS table), "models", "micro",
            and the model modes "infer" and "train".
        peak_fractions: (bench, canonical params) -> (fraction of peak, diagnosis.peak.Peak)
            over the shown rows.
        families: bench -> family ("cpu/gemm", diagnosis.rules.scope.row_scope).
        runtime: side -> {"clock": (MHz or None, source), "cores": evidence dict} of
            that side's probe (diagnosis.peak.clock_mhz, diagnosis.evidence.cores_evidence).
        gpu: {"device": name or None, "peak": (dtype -> TFLOP/s, source) or None,
            "cpu_bound_ratio": float}: the GPU tables' basis (diagnosis.peak, rules.gpu).
        aa_floor: analysis.compare.AA_FLOOR (fraction).
        inconclusive_half_width: analysis.precision.INCONCLUSIVE_HALF_WIDTH (fraction).
        unpaired: the comparisons are unpaired (two stored runs, analysis.unpaired).
        trials: the explain step's trial outcomes (explain_stage.trials.TrialResult), () without.
    """

    comparisons: Tuple[Any, ...] = ()
    differences: Tuple[Any, ...] = ()
    findings: Tuple[Finding, ...] = ()
    verdict: Any = None
    with_reference: bool = False
    model_rows: Tuple[Any, ...] = ()
    model_benches: Mapping[str, Tuple[str, str, str]] = dataclasses.field(default_factory=dict)
    geomeans: Mapping[str, Optional[float]] = dataclasses.field(default_factory=dict)
    peak_fractions: Mapping[tuple, tuple] = dataclasses.field(default_factory=dict)
    families: Mapping[str, str] = dataclasses.field(default_factory=dict)
    runtime: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    gpu: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    aa_floor: float = 0.05
    inconclusive_half_width: float = 0.0
    unpaired: bool = False
    trials: Tuple[Any, ...] = ()

    @property
    def models(self) -> Tuple[Any, ...]:
        """The comparisons of the models suite's rows."""
        return tuple(c for c in self.comparisons if c.bench in self.model_benches)

    @property
    def micro(self) -> Tuple[Any, ...]:
        """The comparisons of the micro-suite's rows."""
        return tuple(c for c in self.comparisons if c.bench not in self.model_benches)

    @property
    def models_shown(self) -> bool:
        """The Models table is shown (a reference and model rows): the relative-OPS
        table then lists the micro rows only."""
        return self.with_reference and bool(self.model_rows)

    @property
    def shown(self) -> Tuple[Any, ...]:
        """The rows of the relative-OPS table."""
        return self.micro if self.models_shown else self.comparisons

    def with_findings(self, findings: Sequence[Finding], trials: Sequence = ()) -> "Analysis":
        """This analysis with `findings` in place of its own, one for one (the explain
        step adds evidence or names a confirmed cause; severities are kept), and the
        explain step's trial outcomes.

        Raises:
            ValueError: `findings` is not one finding per finding of this analysis.
        """
        findings = tuple(findings)
        if len(findings) != len(self.findings):
            raise ValueError("with_findings: %d findings for %d"
                             % (len(findings), len(self.findings)))
        swap = {id(old): new for old, new in zip(self.findings, findings)}
        verdict = self.verdict
        if verdict is not None:
            ordered = sort_findings(swap.get(id(f), f) for f in verdict.findings)
            members = {name: {id(swap.get(id(f), f)) for f in getattr(verdict, name)}
                       for name in ("blocking", "warnings")}
            verdict = dataclasses.replace(verdict, findings=ordered, **{
                name: tuple(f for f in ordered if id(f) in ids) for name, ids in members.items()})
        return dataclasses.replace(self, findings=findings, verdict=verdict,
                                   trials=tuple(trials) or self.trials)


#: The stored order of a row's first keys (schema 2); fields added later follow.
ROW_KEYS = ("bench", "params", "family", "relative_ops", "ci_low", "ci_high", "significant",
            "noisy", "rounds", "pairs", "inconclusive", "estimate", "pair_ratios", "target",
            "reference")
#: A side's rate as stored (analysis.compare.Rate fields).
RATE_KEYS = ("value", "unit", "median_s", "samples", "rel_iqr", "kernels")


def _rate_json(rate) -> Optional[Dict[str, Any]]:
    if rate is None:
        return None
    return {key: list(getattr(rate, key)) if key == "kernels" else getattr(rate, key)
            for key in RATE_KEYS}


def row_json(comparison, family: str) -> Dict[str, Any]:
    """One comparison as JSON values: every field of the Comparison (a field added to
    it is stored with no change here; dataclasses.asdict values), rates by RATE_KEYS,
    plus its `family`; raw numbers (relative OPS as a ratio, 1.0 = equal)."""
    fields = {f.name: getattr(comparison, f.name) for f in dataclasses.fields(comparison)}
    values = dict(fields, family=family, target=_rate_json(comparison.target),
                  reference=_rate_json(comparison.reference),
                  pair_ratios=list(comparison.pair_ratios))
    for name, value in values.items():
        if dataclasses.is_dataclass(value):
            values[name] = dataclasses.asdict(value)
    return {key: values[key] for key in ROW_KEYS + tuple(k for k in values if k not in ROW_KEYS)}
