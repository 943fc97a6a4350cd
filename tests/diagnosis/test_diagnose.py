"""The rule registry and the diagnosis of whole audits (real runs)."""

import json
import pathlib
import sys

import pytest

from eb_torchperf.diagnosis import diagnose
from eb_torchperf.analysis.compare import compare
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult, load_results

from auditcases import golden_result
import testdata

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"


def test_rule_modules_load_in_order():
    rules = diagnose.load_rules(("eb_torchperf.diagnosis.rules.build", "eb_torchperf.diagnosis.rules.blas"))
    names = [r.__name__ for r in rules]
    assert names[0] == "onednn_off" and names[-1] == "mkl_on_amd"
    assert len(names) == 10


def test_a_missing_rule_module_is_an_error():
    with pytest.raises(ImportError, match="no_such_module"):
        diagnose.load_rules(("eb_torchperf.diagnosis.rules.no_such_module",))


def test_every_rule_module_loads():
    modules = {r.__module__ for r in diagnose.load_rules()}
    assert modules == set(diagnose.RULE_MODULES)


def test_a_rule_module_that_fails_to_import_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "broken_rules_xyz.py").write_text("import does_not_exist_xyz\nRULES = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="does_not_exist_xyz"):
        diagnose.load_rules(("broken_rules_xyz",))
    sys.modules.pop("broken_rules_xyz", None)


def test_golden_audit_findings_sorted_and_about_the_target():
    result = golden_result()
    findings = testdata.diagnose(result)
    assert [(f.severity, f.rule_id) for f in findings] == [
        ("error", "blas-not-mkl"), ("warning", "mkl-missing"), ("warning", "threads-vs-cores"),
        ("info", "cpu-capability-low")]
    assert {f.subject for f in findings} == {"/usr/bin/python3"}


def test_custom_rules_and_given_comparisons_are_used():
    result = golden_result()

    def always(target, reference, comparisons):
        return [Finding("always", "info", "%d comparisons" % len(comparisons), {}, "none", "x")]
    findings = diagnose.diagnose(result, compare(result)[:1], rules=[always])
    assert [f.title for f in findings] == ["1 comparisons"]


def test_with_findings_replaces_and_round_trips_through_json():
    result = golden_result()
    diagnosed = testdata.with_findings(result)
    assert diagnosed.results == result.results
    again = AuditResult.from_json(json.loads(json.dumps(diagnosed.to_json())))
    assert again.findings == diagnosed.findings


def test_no_target_probe_no_findings():
    result = golden_result()
    empty = AuditResult(suite="quick", options={}, target=None, reference=None)
    assert testdata.diagnose(empty) == ()
    assert testdata.diagnose(result, rules=[]) == ()


# -- acceptance, on the stored real runs of reports/examples/ -----------------------------

def test_debian_against_the_wheel_finds_classes_1_2_6_8():
    result = load_results(EXAMPLES / "debian-python3-torch-vs-wheel-2.13.0.json")
    findings = {f.rule_id: f for f in testdata.diagnose(result)}
    assert {"blas-not-mkl", "mkl-missing", "threads-vs-cores", "cpu-capability-low"} <= set(findings)
    assert findings["blas-not-mkl"].severity == "error"
    assert findings["threads-vs-cores"].title == "1 intra-op thread on 2 usable cores"
    assert findings["cpu-capability-low"].severity == "info"  # upstream 1.13 selects AVX2 too


def test_the_wheel_against_itself_has_no_warning_or_error():
    result = load_results(EXAMPLES / "wheel-2.13.0-vs-itself.json")
    findings = testdata.diagnose(result)
    assert [f.severity for f in findings if f.severity != "info"] == []
