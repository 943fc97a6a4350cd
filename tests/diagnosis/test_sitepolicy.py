"""Site policy: EB_TORCHPERF_* parsing at its boundaries, the verdict, environments."""

import dataclasses
import os
import pathlib

import pytest

from eb_torchperf.diagnosis import sitepolicy
from eb_torchperf.analysis.compare import compare
from eb_torchperf.diagnosis.verdict import assess
from eb_torchperf.errors import ConfigError
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult, BenchResult, ProbeResult
from eb_torchperf.workflows.sitecheck import with_baseline
from eb_torchperf.diagnosis.sitepolicy import Policy, parse_percent, policy_from_env
from eb_torchperf.measure.environ import env_diff, own_site_overrides, without_root
from eb_torchperf.present.site_verdict import judge

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "easybuild.md"


def test_defaults_without_variables():
    assert policy_from_env({}) == Policy(mode="warn", lint="warn", reference="wheel",
                                         suite="quick", only=(), pairs=None,
                                         min_relative_ops=None, fail_level="error")


def test_every_variable_is_read():
    policy = policy_from_env({
        "EB_TORCHPERF_MODE": "FAIL", "EB_TORCHPERF_LINT": "off",
        "EB_TORCHPERF_REFERENCE": " /opt/ref/bin/python ", "EB_TORCHPERF_SUITE": "full",
        "EB_TORCHPERF_ONLY": "matmul_fp32, linear,", "EB_TORCHPERF_PAIRS": "3",
        "EB_TORCHPERF_MIN_RELATIVE_OPS": "80%", "EB_TORCHPERF_FAIL_LEVEL": "warning",
        "EB_TORCHPERF_REPORT_DIR": "/srv/reports", "EB_TORCHPERF_PYTHON": "/usr/bin/python3"})
    assert policy == Policy("fail", "off", "/opt/ref/bin/python", "full",
                            ("matmul_fp32", "linear"), 3, 0.8, "warning", "/srv/reports",
                            "/usr/bin/python3")


def test_lint_mode_follows_mode_unless_set():
    assert policy_from_env({"EB_TORCHPERF_MODE": "fail"}).lint == "fail"
    assert policy_from_env({"EB_TORCHPERF_MODE": "fail", "EB_TORCHPERF_LINT": "warn"}).lint == "warn"


@pytest.mark.parametrize("name, value, match", [
    ("EB_TORCHPERF_MODE", "strict", r"EB_TORCHPERF_MODE=strict: choose one of off \| warn \| fail"),
    ("EB_TORCHPERF_SUITE", "huge", r"EB_TORCHPERF_SUITE=huge: choose one of quick \| full"),
    ("EB_TORCHPERF_FAIL_LEVEL", "info", r"EB_TORCHPERF_FAIL_LEVEL=info: choose one of warning"),
    ("EB_TORCHPERF_PAIRS", "0", r"EB_TORCHPERF_PAIRS=0: give a whole number >= 1"),
    ("EB_TORCHPERF_PAIRS", "two", r"EB_TORCHPERF_PAIRS=two"),
    ("EB_TORCHPERF_MIN_RELATIVE_OPS", "0", r"EB_TORCHPERF_MIN_RELATIVE_OPS=0: must be > 0"),
    ("EB_TORCHPERF_MIN_RELATIVE_OPS", "eighty", r"give a percentage, e\.g\. 80"),
])
def test_bad_values_name_the_variable(name, value, match):
    with pytest.raises(ConfigError, match=match):
        policy_from_env({name: value})


@pytest.mark.parametrize("text, fraction", [
    ("", None), ("  ", None), ("80", 0.8), ("80 %", 0.8), ("0.001", 0.00001),
    ("10000", 100.0)])
def test_percent_boundaries(text, fraction):
    value = parse_percent("X", text)
    if fraction is None:
        assert value is None
    else:
        assert value == pytest.approx(fraction)


@pytest.mark.parametrize("text", ["-5", "0", "10000.1"])
def test_percent_out_of_range(text):
    with pytest.raises(ConfigError, match=r"X=%s: must be > 0 and <= 10000" % text.strip("%")):
        parse_percent("X", text)


def _bench(side, seconds, pair=0, bench="matmul_fp32"):
    return BenchResult(bench=bench, params={"n": 64}, side=side, pair=pair, number_per_run=1,
                       blocks_s=((seconds, seconds), (seconds, seconds)), work=1e9,
                       work_unit="flop")


def _result(target_s=2e-3, reference_s=1e-3, findings=(), complete=True, errors=()):
    return AuditResult(suite="quick", options={}, target=None, reference=None,
                       results=(_bench("target", target_s), _bench("reference", reference_s)),
                       findings=tuple(findings), complete=complete, errors=tuple(errors))


def _judge(result, comparisons, policy):
    """The site policy's judgement of the verdict the pipeline assesses under it."""
    return judge(assess(result, comparisons, policy.fail_level, policy.min_relative_ops),
                 policy)


def _finding(severity, rule_id="r"):
    return Finding(rule_id, severity, "title of %s" % rule_id, {}, "advice", "https://x")


def test_clean_verdict_states_the_geomean():
    verdict = _judge(_result(1e-3, 1e-3), compare(_result(1e-3, 1e-3)), Policy())
    assert (verdict.status, verdict.geomean_relative_ops) == ("ok", 1.0)
    assert verdict.summary == "clean: geomean relative OPS 100 % of reference"


def test_finding_at_fail_level_fails_with_its_line():
    result = _result(findings=[_finding("warning", "a"), _finding("error", "b"),
                               _finding("error", "c")])
    verdict = _judge(result, compare(result), Policy())
    assert verdict.status == "fail"
    assert [f.rule_id for f in verdict.blocking] == ["b", "c"]
    assert verdict.summary == ("FAIL: [error] b: title of b (+1 more); "
                               "geomean relative OPS 50 % of reference")


def test_finding_below_fail_level_warns():
    result = _result(findings=[_finding("warning", "a"), _finding("info", "i")])
    verdict = _judge(result, compare(result), Policy())
    assert (verdict.status, verdict.blocking) == ("warning", ())
    assert verdict.summary.startswith("WARNING: 1 finding(s) below the fail level, first "
                                      "[warning] a: title of a; ")
    assert _judge(result, compare(result), Policy(fail_level="warning")).status == "fail"


def test_minimum_is_strict_at_the_boundary():
    result = _result(2e-3, 1e-3)  # relative OPS exactly 0.5
    assert _judge(result, compare(result), Policy(min_relative_ops=0.5)).status == "ok"
    below = _judge(result, compare(result), Policy(min_relative_ops=0.5000001))
    assert below.status == "fail" and below.below_minimum
    assert below.summary == ("FAIL: geomean relative OPS 50 % of reference (minimum 50 %), "
                             "BELOW MINIMUM")


def test_incomplete_audit_fails_with_its_error():
    result = _result(complete=False, errors=[{"side": "target", "message": "target x: worker "
                                              "killed by signal SIGSEGV"}])
    verdict = _judge(result, compare(result), Policy())
    assert verdict.status == "fail"
    assert verdict.summary.startswith("FAIL: audit incomplete: target x: worker killed by "
                                      "signal SIGSEGV; ")


def test_no_reference_never_fails_the_minimum():
    result = AuditResult(suite="quick", options={}, target=None, reference=None,
                         results=(_bench("target", 1e-3),))
    verdict = _judge(result, compare(result), Policy(min_relative_ops=0.9))
    assert (verdict.status, verdict.geomean_relative_ops) == ("ok", None)
    assert verdict.summary == "clean: no relative OPS (no reference measured)"


def test_baseline_target_side_becomes_the_reference():
    stored = AuditResult(suite="quick", options={},
                         target=ProbeResult.from_facts("target", "/ref/bin/python", {}),
                         reference=None, results=(_bench("target", 1e-3),))
    fresh = AuditResult("quick", {}, ProbeResult.from_facts("target", "/eb/python", {}), None,
                        (_bench("target", 2e-3),))
    merged = with_baseline(fresh, stored)
    assert (merged.reference.label, merged.reference.python) == ("reference", "/ref/bin/python")
    assert [c.relative_ops for c in compare(merged)] == [pytest.approx(0.5)]
    with pytest.raises(ConfigError, match="the baseline results have no target side"):
        with_baseline(fresh, dataclasses.replace(stored, target=None))


def test_without_root_drops_paths_into_the_installation(tmp_path):
    root = str(tmp_path / "PyTorch")
    environ = {"PYTHONPATH": os.pathsep.join([root + "/lib/python3.11/site-packages", "/opt/x"]),
               "EBROOTPYTORCH": root, "PATH": root + "/bin" + os.pathsep + "/usr/bin",
               "OMP_NUM_THREADS": "4", "OTHER": root + "-not-inside"}
    assert without_root(environ, root) == {"PYTHONPATH": "/opt/x", "PATH": "/usr/bin",
                                           "OMP_NUM_THREADS": "4", "OTHER": root + "-not-inside"}


def test_env_diff_restores_before():
    before = {"A": "1", "B": "2"}
    after = {"A": "1", "B": "3", "C": "4"}
    assert env_diff(before, after) == {"B": "2", "C": None}


def test_own_site_dropped_unless_it_holds_torch(tmp_path):
    own = str(pathlib.Path(sitepolicy.__file__).resolve().parents[2])
    assert own_site_overrides({"PYTHONPATH": os.pathsep.join([own, "/opt/x"])}) == \
        {"PYTHONPATH": "/opt/x"}
    assert own_site_overrides({"PYTHONPATH": own}) == {"PYTHONPATH": None}
    assert own_site_overrides({"PYTHONPATH": "/opt/x"}) == {}


def test_help_and_docs_list_every_variable():
    text = sitepolicy.variables_help()
    docs = DOCS.read_text()
    for name in sitepolicy.POLICY_VARIABLES:
        assert name in text
        assert "`%s`" % name in docs


def test_a_minimum_is_not_passed_by_rows_left_inconclusive():
    """One worker pair leaves a row inconclusive (no geometric mean): the summary says so
    and a minimum relative OPS counts as not shown (fails), not as met."""
    result = _result(1e-3, 1e-3)
    vague = [dataclasses.replace(c, relative_ops=None, inconclusive=True, estimate=1.0)
             for c in compare(result)]
    plain = _judge(result, vague, Policy())
    assert plain.status == "ok"
    # never "clean" when no row decided (issue 26)
    assert plain.summary == ("UNDECIDED: relative OPS inconclusive (1 row; more pairs: "
                             "EB_TORCHPERF_PAIRS)")
    gated = _judge(result, vague, dataclasses.replace(Policy(), min_relative_ops=0.5))
    assert gated.status == "fail" and gated.below_minimum
    assert gated.summary.endswith("minimum not shown, BELOW MINIMUM")
