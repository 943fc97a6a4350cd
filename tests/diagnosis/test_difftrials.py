"""Difference trials: planned from an unexplained slowdown, turned into a confirmed cause."""

import dataclasses
import os

from testdata import diagnose
from eb_torchperf.explain_stage.difftrials import (CONFIRMED, cause_text, confirm,
                                                   plan_difference_trials)
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.probe.worker import apply_affinity
from eb_torchperf.explain_stage.trials import TrialResult, TrialRow, check_effect

from eb_torchperf.diagnosis.differences import differences
from auditcases import bench_pair, golden_probe, with_facts, with_section

CONV = ("conv3x3", {"batch": 4, "channels": 64, "hw": 56})


def _diffs(audit):
    return differences(audit.target, audit.reference)


def _baseline():
    wheel = golden_probe("reference")
    target = with_section(wheel, "env", dict(wheel.facts["env"], DNNL_MAX_CPU_ISA="SSE41"),
                          cpu__affinity=[0], cpu__allowed_cores=1)
    results = bench_pair(*CONV, 0.33) + bench_pair("matmul_fp32", {"n": 512}, 1.0)
    audit = AuditResult("quick", {}, target, wheel, results)
    return AuditResult("quick", {}, target, wheel, results, findings=diagnose(audit, rules=[],
                                                                               unexplained_step=True))


def test_one_trial_per_changeable_difference_rerunning_only_the_slow_rows():
    trials, skipped = plan_difference_trials(_baseline(), _diffs(_baseline()))
    assert [(t.label, t.env, t.benches) for t in trials] == [
        ("unset DNNL_MAX_CPU_ISA", {"DNNL_MAX_CPU_ISA": None}, ("conv3x3",)),
        ("run the target with the reference's affinity (taskset -c 0-1)",
         {"EBTP_AFFINITY": "0-1"}, ("conv3x3",)),
        ("unset DNNL_MAX_CPU_ISA + run the target with the reference's affinity (taskset -c 0-1)",
         {"DNNL_MAX_CPU_ISA": None, "EBTP_AFFINITY": "0-1"}, ("conv3x3",))]
    assert trials[2].expect == {"env": {"DNNL_MAX_CPU_ISA": None}, "affinity": 2}
    assert all(t.rule_ids == ("unexplained-slowdown",) for t in trials)
    assert skipped == []


def test_no_trials_without_an_unexplained_slowdown():
    wheel = golden_probe("reference")
    audit = AuditResult("quick", {}, wheel, wheel, bench_pair(*CONV, 1.0))
    assert plan_difference_trials(audit, _diffs(audit)) == ([], [])


def test_a_recovering_trial_confirms_the_cause():
    baseline = _baseline()
    trial = plan_difference_trials(baseline, _diffs(baseline))[0][0]
    result = TrialResult(trial, True, "env: DNNL_MAX_CPU_ISA=None",
                         (TrialRow("conv3x3", CONV[1], False, 0.33, 0.99),), "recovered")
    [finding] = confirm(baseline.findings, [result])
    assert finding.rule_id == CONFIRMED and finding.severity == "warning"
    assert finding.title == ("Slowdown caused by DNNL_MAX_CPU_ISA: conv3x3 33 % -> 99 % "
                             "(unset DNNL_MAX_CPU_ISA)")
    assert finding.evidence["cause"] == ["DNNL_MAX_CPU_ISA"]
    both = plan_difference_trials(baseline, _diffs(baseline))[0][2]
    partly = dataclasses.replace(result, verdict="partly recovered",
                                 rows=(TrialRow("conv3x3", CONV[1], False, 0.33, 0.6),))
    together = TrialResult(both, True, "", (TrialRow("conv3x3", CONV[1], False, 0.33, 1.0),),
                           "recovered")
    [f] = confirm(baseline.findings, [partly, together])
    assert f.title.startswith("Slowdown caused by DNNL_MAX_CPU_ISA and CPU affinity together: "
                              "conv3x3 33 % -> 100 %")
    no_gain = TrialResult(trial, True, "", (TrialRow("conv3x3", CONV[1], False, 0.33, 0.34),),
                          "no effect")
    assert [f.rule_id for f in confirm(baseline.findings, [no_gain])] == ["unexplained-slowdown"]


def test_affinity_check_and_worker_switch():
    wheel = golden_probe("reference")
    assert check_effect({"affinity": 2}, wheel) == (True, "CPU affinity: 2 cores")
    assert check_effect({"affinity": 2}, with_facts(wheel, cpu__affinity=[0]))[0] is False
    before = os.sched_getaffinity(0)
    apply_affinity(",".join(str(c) for c in sorted(before)))
    assert os.sched_getaffinity(0) == before
    apply_affinity(None)
    assert os.sched_getaffinity(0) == before


def test_trials_keep_the_baseline_overrides_and_run_on_the_rows_device(monkeypatch):
    from eb_torchperf.explain_stage import profiling as explain
    seen = []

    class FakeRun:
        def __init__(self, target, reference, suite, options, only, devices, progress,
                     target_env, reference_env):
            seen.append((only, devices, target_env))

        def run(self):
            return AuditResult("quick", {}, None, None, ())
    monkeypatch.setattr(explain, "AuditRun", FakeRun)
    monkeypatch.setattr(explain, "summarize_trial", lambda trial, before, audit, after: None)
    monkeypatch.setattr(explain.difftrials, "with_first_call", lambda result, baseline: result)
    base = _baseline()
    baseline = AuditResult("quick", {"target_env": {"DNNL_MAX_CPU_ISA": "SSE41", "X": "1"}},
                           base.target, base.reference, base.results, findings=base.findings)
    trial = plan_difference_trials(baseline, _diffs(baseline))[0][0]
    gpu = dataclasses.replace(trial, benches=("gemm_cuda",))
    explain.run_trials(baseline, (), [trial, gpu], options=None)
    assert seen == [(["conv3x3"], ("cpu",), {"DNNL_MAX_CPU_ISA": None, "X": "1"}),
                    (["gemm_cuda"], ("cuda",), {"DNNL_MAX_CPU_ISA": None, "X": "1"})]


def test_the_cause_lists_only_the_rows_the_finding_named_slow():
    # a trial re-runs whole benchmarks: matmul_fp32 was at 100 % and stays out of the
    # cause; a verdict judged on every re-run row would be diluted by it
    baseline = _baseline()
    trial = plan_difference_trials(baseline, _diffs(baseline))[0][0]
    rows = (TrialRow("conv3x3", CONV[1], False, 0.33, 0.98),
            TrialRow("conv3x3", {"batch": 1, "channels": 64, "hw": 56}, False, 1.01, 0.99),
            TrialRow("matmul_fp32", {"n": 512}, True, 1.0, 0.97))
    result = TrialResult(trial, True, "", rows, "partly recovered")
    [finding] = confirm(baseline.findings, [result])
    assert finding.title == ("Slowdown caused by DNNL_MAX_CPU_ISA: conv3x3 33 % -> 98 % "
                             "(unset DNNL_MAX_CPU_ISA)")
    [tried] = finding.evidence["trials"]
    assert tried["verdict"] == "recovered" and len(tried["rows"]) == 1


def test_the_title_names_the_rows_that_gained_most_and_counts_the_rest():
    baseline = _baseline()
    trial = plan_difference_trials(baseline, _diffs(baseline))[0][0]
    rows = tuple(TrialRow("conv3x3", {"batch": b, "channels": 64, "hw": 56}, False, before, 1.0)
                 for b, before in [(1, 0.9), (2, 0.5), (4, 0.33), (8, 0.8), (16, 0.6)])
    rows += (TrialRow("gelu", {}, False, 0.5, 0.99),)
    result = TrialResult(trial, True, "", rows, "recovered")
    assert cause_text(result) == (
        "DNNL_MAX_CPU_ISA: conv3x3 batch=2 channels=64 hw=56 50 % -> 100 %, conv3x3 batch=4 "
        "channels=64 hw=56 33 % -> 100 %, gelu 50 % -> 99 % and 3 more rows "
        "(unset DNNL_MAX_CPU_ISA)")
    assert cause_text(dataclasses.replace(result, rows=rows[:4])).endswith(
        "and 1 more row (unset DNNL_MAX_CPU_ISA)")
