"""Rules numerics-wrong-result / numerics-reduced-precision on constructed comparisons,
their wording, and the site policy (a wrong result stops the hook in warn mode)."""

import dataclasses

from eb_torchperf.present.site_verdict import Verdict as SiteVerdict
from eb_torchperf.analysis import numerics as analysis_numerics
from eb_torchperf.diagnosis import sitepolicy
from eb_torchperf.diagnosis.diagnose import load_rules
from eb_torchperf.diagnosis.rules import numerics as rule
from eb_torchperf.present.units import evidence_text, format_numerics
from eb_torchperf.records.findings import Finding

from auditcases import comparisons, golden_probe, with_section

WHEEL = golden_probe("reference")
BOUND = 1.13e-05


def side(norm_rel, flushed=0):
    return {"max_rel": 6 * norm_rel, "norm_rel": norm_rel, "flushed": flushed,
            "dtype": "float32", "bound": BOUND, "depth": 512}


def row(ratio, target, reference, bench="matmul_fp32", params=None):
    (c,) = comparisons((bench, params or {"n": 512}, ratio))
    return dataclasses.replace(c, numerics=analysis_numerics.assess(target, reference))


def test_registered_and_explain_no_slow_row():
    assert {rule.wrong_result, rule.reduced_precision} <= set(load_rules())
    assert rule.wrong_result.affects == rule.reduced_precision.affects == frozenset()


def test_agreeing_rows_give_no_finding():
    rows = [row(0.1, side(4.1e-7), side(2.4e-7)), row(1.0, {}, {})]
    assert rule.wrong_result(WHEEL, WHEEL, rows) == rule.reduced_precision(WHEEL, WHEEL, rows) == []


def test_wrong_result_names_row_errors_mechanism_and_preload():
    target = with_section(WHEEL, "env", dict(WHEEL.facts["env"], LD_PRELOAD="/x/libbad.so"))
    rows = [row(0.09, side(0.35), side(2.4e-7)),
            row(0.1, side(0.4), side(2.4e-7), "linear", {"tokens": 256, "in": 1024, "out": 1024})]
    [f] = rule.wrong_result(target, WHEEL, rows)
    assert (f.rule_id, f.severity, f.source) == ("numerics-wrong-result", "error",
                                                 rule.SOURCE_WRONG)
    assert f.title == ("Wrong results, likely a wrong kernel: matmul_fp32 n=512 (error 0.35 "
                       "against float64, reference 2.4e-07, bound 1.1e-05) and 1 more row")
    assert evidence_text(f.evidence["matmul_fp32 n=512"]) == "0.35 vs 2.4e-07"
    assert f.evidence["LD_PRELOAD"] == "/x/libbad.so"
    assert "LD_PRELOAD" in f.advice and "wrong kernel" in f.advice
    assert rule.reduced_precision(target, WHEEL, rows) == []


def test_reduced_precision_that_is_faster_says_why():
    rows = [row(1.42, side(5.1e-4), side(2.4e-7))]
    assert rows[0].significant
    [f] = rule.reduced_precision(WHEEL, WHEEL, rows)
    assert (f.rule_id, f.severity) == ("numerics-reduced-precision", "warning")
    assert f.title.startswith("Reduced precision, likely a reduced-precision math mode: "
                              "matmul_fp32 n=512 (error 0.00051 against float64")
    assert f.title.endswith("matmul_fp32 n=512 is faster (142 %) because it computes in "
                            "reduced precision")
    assert "TF32" in f.advice and f.evidence["matmul_fp32 n=512 relative OPS"]["value"] == 1.42
    slower = [row(0.9, side(5.1e-4), side(2.4e-7))]
    assert "because" not in rule.reduced_precision(WHEEL, WHEEL, slower)[0].title


def test_flushed_denormals_named():
    rows = [row(1.0, side(1.0, flushed=16384), side(2.3e-7), "denormal",
                {"numel": 16384, "values": "denormal"})]
    [f] = rule.reduced_precision(WHEEL, WHEEL, rows)
    assert "likely denormals flushed to zero: denormal numel=16384 values=denormal" in f.title
    assert "-ffast-math" in f.advice
    assert rule.wrong_result(WHEEL, WHEEL, rows) == []


def test_numerics_cell():
    assert format_numerics(row(1.0, side(2.4e-7), side(4.1e-7))) == "2.4e-07 vs 4.1e-07"
    assert format_numerics(row(1.0, side(0.35), side(2.4e-7))) == "WRONG 0.35 vs 2.4e-07"
    assert format_numerics(row(1.0, side(5e-4), None)) == "REDUCED 0.0005"
    model = row(1.0, {"dtype": "float32", "loss": 1.0}, {"dtype": "float32", "loss": 1.5})
    assert format_numerics(model) == "WRONG Δ 0.33"
    assert format_numerics(row(1.0, {}, {})) == ""


def _verdict(*findings):
    return SiteVerdict("fail", None, tuple(findings), False, "", "")


def test_hook_default_policy_fails_a_wrong_result_and_warns_on_precision():
    wrong = Finding("numerics-wrong-result", "error", "Wrong results", {}, "", "")
    other = Finding("blas-not-mkl", "error", "reference BLAS", {}, "", "")
    default = sitepolicy.Policy()
    assert default.mode == "warn" and default.fail_level == "error"
    assert sitepolicy.stops_build(_verdict(wrong), default)
    assert not sitepolicy.stops_build(_verdict(other), default)  # warn mode: warns only
    assert sitepolicy.stops_build(_verdict(other), dataclasses.replace(default, mode="fail"))
    warned = SiteVerdict("warning", None, (), False, "", "")
    assert not sitepolicy.stops_build(warned, default)  # reduced precision: a warning
