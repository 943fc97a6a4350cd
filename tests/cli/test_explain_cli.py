"""`eb-torchperf explain` end to end (on a stored baseline) and its one-line errors."""

import dataclasses

import pytest

from eb_torchperf.measure.interleave import RunnerOptions
from eb_torchperf.cli.dispatch import main
from eb_torchperf.explain_stage.run import load_explain
from eb_torchperf.records.measurements import AuditResult, load_results

from explain_helpers import (DEBIAN_FACTS, WHEEL_FACTS, bench, golden_facts, probe_from)


def baseline_file(tmp_path, target, reference):
    """A stored audit of `target` against `reference` with one matmul row (hand-built)."""
    result = AuditResult(
        "quick", dataclasses.asdict(RunnerOptions()),
        probe_from(golden_facts(DEBIAN_FACTS), "target", target),
        probe_from(golden_facts(WHEEL_FACTS), "reference", reference),
        (bench("matmul_fp32", "target", [0.05, 0.05]),
         bench("matmul_fp32", "reference", [0.001, 0.001])))
    path = tmp_path / "torchperf-x.json"
    result.save(path)
    return str(path)


def test_explain_profiles_a_stored_baseline(tmp_path, capsys, debian_python, wheel_python):
    """A stored baseline without findings gets them; the BLAS one gains the profile."""
    path = baseline_file(tmp_path, debian_python, wheel_python)
    status = main(["explain", "--results", path, "--workload", "dlrm", "--profile-rounds", "1",
                   "--no-remedies", "--quiet", "--format", "md"])
    assert status == 1  # blas-not-mkl is an error; --fail-on error
    result = load_explain(str(tmp_path / "torchperf-x.explain.json"))
    assert [d.workload for d in result.profiles] == ["dlrm"]
    assert result.trials == () and result.rebuild == () and result.errors == ()
    assert result.results_file == path
    findings = {f.rule_id: f for f in load_results(path).findings}
    evidence = findings["blas-not-mkl"].evidence
    assert evidence["profile: BLAS or oneDNN (GEMM), workload"] == "all workloads"
    per_step = evidence["profile: BLAS or oneDNN (GEMM), self CPU per step"]
    assert per_step["unit"] == "s" and per_step["value"] > per_step["reference"] > 0
    assert "## Explain: profile diff and remedy trials" in (
        tmp_path / "torchperf-x.md").read_text()
    out = capsys.readouterr().out
    assert "Profile diff: self CPU time per step" in out
    assert "ERROR blas-not-mkl" in out
    assert "explain: %s" % (tmp_path / "torchperf-x.explain.json") in out


def test_explain_diagnoses_its_baseline_audit(tmp_path, debian_python, wheel_python):
    """A measured baseline is saved with findings; with trials, the findings no trial
    addresses are the ones that need a rebuild."""
    out = tmp_path / "run.json"
    status = main(["explain", "--python", debian_python, "--reference", wheel_python,
                   "--only", "layernorm", "--pairs", "1", "--no-profile", "--quiet",
                   "--out", str(out), "--format", "md", "--fail-on", "never"])
    assert status == 0
    rule_ids = [f.rule_id for f in load_results(out).findings]
    assert "blas-not-mkl" in rule_ids and "mkl-missing" in rule_ids
    result = load_explain(tmp_path / "run.explain.json")
    tried = {r for t in result.trials for r in t.trial.rule_ids}
    assert "blas-not-mkl" not in tried  # its benchmarks (GEMM) were not measured
    rebuild = {item["rule_id"] for item in result.rebuild}
    assert {"blas-not-mkl", "mkl-missing"} <= rebuild
    assert set(rule_ids) - tried <= rebuild
    assert (tmp_path / "run.md").is_file()


def test_results_and_interpreters_exclude_each_other(tmp_path, capsys):
    path = baseline_file(tmp_path, "/usr/bin/python3", "/usr/bin/python3")
    assert main(["explain", "--results", path, "--python", "/usr/bin/python3"]) == 2
    assert capsys.readouterr().err == ("eb-torchperf: error: --results takes the interpreters "
                                       "from the file; leave out --python and --reference\n")


def test_explain_needs_a_reference(capsys):
    import sys
    assert main(["explain", "--python", sys.executable, "--reference", "none"]) == 2
    assert "explain needs a reference" in capsys.readouterr().err


@pytest.mark.parametrize("rounds", ["0", "-1"])
def test_profile_rounds_below_one_names_the_option(tmp_path, capsys, rounds):
    path = baseline_file(tmp_path, "/usr/bin/python3", "/usr/bin/python3")
    assert main(["explain", "--results", path, "--profile-rounds", rounds]) == 2
    assert capsys.readouterr().err == (
        "eb-torchperf: error: --profile-rounds must be a whole number >= 1 (got %s): profile "
        "requests per side and workload\n" % rounds)
