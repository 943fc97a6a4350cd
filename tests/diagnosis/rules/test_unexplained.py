"""The final unexplained-slowdown step, rule families, the verdict."""

import dataclasses

from eb_torchperf.diagnosis.diagnose import load_rules
from testdata import analysed, diagnose
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.present.report.render import verdict
from eb_torchperf.diagnosis.rules.scope import CUDA_STARTUP, families

from auditcases import bench_pair, golden_probe, with_facts, with_section

CONV = ("conv3x3", {"batch": 4, "channels": 64, "hw": 56})
GEMM = ("matmul_fp32", {"n": 512})


def _audit(specs, target=None, reference=None):
    wheel = golden_probe("reference")
    results = tuple(r for bench, params, ratio in specs for r in bench_pair(bench, params, ratio))
    return AuditResult("quick", {}, target or wheel, reference or wheel, results)


def _env_target(**env):
    wheel = golden_probe("reference")
    return with_section(wheel, 'env', dict(wheel.facts["env"], **env))


def _finding(severity, affects):
    return lambda t, r, c: [Finding("some-rule", severity, "a cause", {}, "fix", "url",
                                    affects=affects)]


def test_slow_row_without_cause_gives_a_warning_naming_row_and_candidate():
    audit = _audit([CONV + (0.33,), GEMM + (1.0,)], target=_env_target(DNNL_MAX_CPU_ISA="SSE41"))
    found = diagnose(audit, rules=[], unexplained_step=True)
    assert [f.rule_id for f in found] == ["unexplained-slowdown"]
    f = found[0]
    assert f.severity == "warning" and f.affects == ("cpu/conv",)
    [row] = f.evidence["rows"]
    ops = row["relative_ops"]
    assert row["bench"] == "conv3x3" and ops["unit"] == "ratio" and abs(ops["value"] - 0.33) < 1e-9
    assert ops["low"] <= 0.33 + 1e-9 and ops["high"] < 0.95
    assert [c["key"] for c in f.evidence["candidates"]] == ["DNNL_MAX_CPU_ISA"]
    assert "conv3x3" in f.title and "33 %" in f.title
    text = verdict(analysed(AuditResult("quick", {}, audit.target, audit.reference,
                                        audit.results, findings=found),
                            keep_findings=True)[1])["text"]
    assert text.startswith("WARNING")


def test_a_warning_of_the_rows_family_explains_it_an_info_does_not():
    audit = _audit([CONV + (0.33,)])
    conv = ("cpu/conv",)
    assert [f.rule_id for f in diagnose(audit, rules=[_finding("warning", conv)],
                                        unexplained_step=True)] == ["some-rule"]
    assert sorted(f.rule_id for f in diagnose(audit, rules=[_finding("info", conv)],
                                              unexplained_step=True)) == [
        "some-rule", "unexplained-slowdown"]
    assert "unexplained-slowdown" in [f.rule_id for f in diagnose(
        audit, rules=[_finding("error", ("cpu/gemm",))], unexplained_step=True)]


def test_equal_sides_and_a_gap_within_the_floor_give_nothing():
    assert diagnose(_audit([CONV + (1.0,), GEMM + (0.97,)]), rules=[], unexplained_step=True) == ()


def test_slow_first_cuda_call_is_a_row():
    wheel = golden_probe("reference")
    slow = with_section(wheel, 'gpu', {"available": True, "first_call_s": 1.455})
    fast = with_section(wheel, 'gpu', {"available": True, "first_call_s": 0.162})
    found = diagnose(_audit([GEMM + (1.0,)], slow, fast), rules=[], unexplained_step=True)
    [row] = found[0].evidence["rows"]
    assert row["row"] == "first CUDA call"
    assert abs(row["relative_ops"]["value"] - 0.162 / 1.455) < 1e-9
    assert row["seconds"] == {"value": 1.455, "unit": "s", "reference": 0.162}
    assert diagnose(_audit([GEMM + (1.0,)], fast, slow), rules=[], unexplained_step=True) == ()


def test_every_rule_declares_registry_families():
    known = families() | CUDA_STARTUP
    for rule in load_rules():
        assert isinstance(rule.affects, frozenset), rule.__name__
        assert rule.affects <= known, rule.__name__


def test_default_diagnosis_stamps_affects_on_findings():
    wheel = golden_probe("reference")
    target = with_section(wheel, 'env', dict(wheel.facts["env"], ATEN_CPU_CAPABILITY="default"),
                        torch__cpu_capability="DEFAULT")
    found = {f.rule_id: f for f in diagnose(_audit([GEMM + (1.0,)], target))}
    assert "cpu/vectorised" in found["cpu-capability-low"].affects


def test_geometric_mean_counts_only_when_its_interval_over_pairs_is_below_the_floor():
    from eb_torchperf.analysis.compare import compare_pair
    from eb_torchperf.diagnosis.rules.unexplained import geomean_interval
    rows = []
    for bench, params in (GEMM, CONV):
        target, reference = [], []
        for pair, ratio in enumerate((0.90, 0.91, 0.89)):
            t, r = bench_pair(bench, params, ratio)
            target.append(dataclasses.replace(t, pair=pair))
            reference.append(dataclasses.replace(r, pair=pair))
        rows.append(compare_pair(target, reference))
    geo, low, high = geomean_interval(rows)
    assert abs(geo - 0.9) < 0.005 and high < 0.95
    noisy = [dataclasses.replace(c, pair_ratios=(0.5, 1.3, 0.9)) for c in rows]
    assert geomean_interval(noisy)[2] > 1.0
