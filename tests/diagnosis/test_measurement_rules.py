"""host-busy and measurement-undecided: findings, verdict and site policy (issue 26)."""

import pytest

from eb_torchperf.analysis.compare import compare
from eb_torchperf.diagnosis.rules.measurement import host_busy, measurement_undecided
from eb_torchperf.diagnosis.sitepolicy import Policy
from eb_torchperf.present.site_verdict import judge as site_judge
from eb_torchperf.diagnosis.verdict import assess
from eb_torchperf.present.report.render import verdict
from eb_torchperf.records.measurements import AuditResult, BenchResult, ProbeResult
from testdata import record


def judge(result, comparisons, policy):
    """The site check's reading of the verdict the pipeline assesses under `policy`."""
    return site_judge(assess(result, comparisons, policy.fail_level, policy.min_relative_ops),
                      policy, result.reference is not None)


def _result(load, ratio=1.0, n=4, spread=0.0):
    rows = []
    for p in range(n):
        wobble = 1.0 + spread * (1 if p % 2 else -1)
        for side, t in (("target", 1.0 / (ratio * wobble)), ("reference", 1.0)):
            rows.append(BenchResult(bench="matmul_fp32", params={"n": 512}, side=side, pair=p,
                                    number_per_run=1, blocks_s=((t,),) * 3,
                                    work=2.0 * 512 ** 3, work_unit="flop", contention=load))
    probe = ProbeResult.from_facts("target", "/x/python", {})
    return AuditResult("quick", {}, probe, ProbeResult.from_facts("reference", "/y", {}),
                       tuple(rows))


def _findings(result):
    comparisons = compare(result)
    return comparisons, (host_busy(result.target, result.reference, comparisons)
                         + measurement_undecided(result.target, result.reference, comparisons))


def test_busy_host_gives_both_findings_and_no_ok():
    result = _result({"other_cpu": 0.55, "runq": 1.5}, ratio=1.85)
    comparisons, found = _findings(result)
    assert [f.rule_id for f in found] == ["host-busy", "measurement-undecided"]
    busy = found[0]
    assert busy.evidence["other processes' CPU share"]["value"] == pytest.approx(0.55)
    assert "busy host" in found[1].title
    import dataclasses
    result = dataclasses.replace(result, findings=tuple(found))
    judged = assess(result, comparisons)
    assert judged.decided == 0 and judged.status == "warning"
    line = verdict(record(result))["text"]
    assert not line.startswith("OK") and "185" not in line


def test_undecided_without_findings_reads_undecided_not_ok_or_clean():
    result = _result({"other_cpu": 0.55})
    comparisons = compare(result)
    assert verdict(record(result))["text"].startswith("UNDECIDED")
    warn = judge(result, comparisons, Policy(mode="warn"))
    assert warn.summary.startswith("UNDECIDED") and warn.status == "ok"
    fail = judge(result, comparisons, Policy(mode="fail"))
    assert fail.status == "fail" and "not shown" in fail.problem


def test_idle_decided_audit_has_no_measurement_finding():
    result = _result({"other_cpu": 0.01}, ratio=0.5)
    comparisons, found = _findings(result)
    assert found == [] and assess(result, comparisons).decided == 1
    assert judge(result, comparisons, Policy(mode="fail")).status == "ok"


def test_noisy_node_says_which_losses_it_cannot_see():
    result = _result({"other_cpu": 0.0}, ratio=1.0, n=4, spread=0.3)
    comparisons, found = _findings(result)
    assert [f.rule_id for f in found] == ["measurement-undecided"]
    assert "cannot be seen" in found[0].title or "could not decide" in found[0].title
    assert "--pairs" in found[0].advice
