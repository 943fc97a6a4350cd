"""The explain document (schema, round trip, errors) and its terminal rendering."""

import dataclasses
import importlib
import importlib.util
import inspect
import json

import pytest
from rich.console import Console

from eb_torchperf.present.units import evidence_text
from eb_torchperf.measure.interleave import RunnerOptions
from eb_torchperf.diagnosis.diagnose import RULE_MODULES, diagnose
from eb_torchperf.errors import ConfigError, SchemaError
from eb_torchperf.explain_stage.run import (EXPLAIN_SCHEMA_VERSION, ExplainResult, ProfileOptions,
                                  annotate_findings, explain, explain_path, find_explain,
                                  load_explain, profile_evidence)
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.analysis.profile_diff import RULE_BACKENDS, OpTime, WorkloadProfile, diff_profiles
from eb_torchperf.explain_stage.remedies import Trial
from eb_torchperf.present.terminal_explain import format_seconds, op_sentence, print_explain
from eb_torchperf.explain_stage.trials import TrialResult, TrialRow

from auditcases import golden_result
from testdata import record
from explain_helpers import (DEBIAN_BERT_EVAL, DEBIAN_FACTS, WHEEL_BERT_EVAL, golden_facts,
                             probe_from)


def side(label, ops, workload="bert_layer_infer"):
    return WorkloadProfile(workload, label, 2, sum(ops.values()), 1, "x",
                           tuple(OpTime(n, s, 6.0) for n, s in ops.items()))


def document():
    diff = diff_profiles(side("target", {"aten::addmm": 3.9, "aten::native_layer_norm": 0.002}),
                         side("reference", {"aten::addmm": 0.045,
                                            "aten::native_layer_norm": 0.001}))
    trial = Trial(("threads-to-cores",), ("threads-vs-cores",), "OMP_NUM_THREADS=2",
                  {"OMP_NUM_THREADS": "2"}, {"threads": 2}, ("layernorm",))
    result = TrialResult(trial, True, "intra-op threads: 2", (
        TrialRow("layernorm", {"rows": 8192, "cols": 768}, False, 0.3, 0.55, 0.5, 0.6),),
        "partly recovered")
    return ExplainResult("/usr/bin/python3", "/venv/bin/python", "reports/a.json", (diff,),
                         (result,), ({"remedy_id": "blas-provider-path", "rule_id": "blas-not-mkl",
                                      "reason": "no other provider"},),
                         ({"rule_id": None, "why": "the remaining gap is build-time"},), (),
                         12.5, 4.0, "2026-11-30T18:00:00+00:00", "dev")


def test_round_trip_through_a_file(tmp_path):
    path = tmp_path / "sub" / "x.explain.json"
    document().save(path)
    data = json.loads(path.read_text())
    assert (data["schema_version"], data["kind"]) == (EXPLAIN_SCHEMA_VERSION,
                                                      "eb_torchperf-explain")
    assert data["overall"]["ops"][0]["op"] == "aten::addmm"
    assert data["trials"][0]["rows"][0]["gain"] == pytest.approx(0.55 / 0.3)
    assert load_explain(path) == document()


@pytest.mark.parametrize("change, message", [
    ({"kind": "eb_torchperf-results"}, "not an eb_torchperf explain document"),
    ({"schema_version": 2}, "explain schema version 2 is not supported"),
    ({"trials": [{"trial": {}}]}, r"trials\[0\].trial: missing field 'label'"),
])
def test_bad_documents(change, message):
    data = dict(document().to_json(), **change)
    with pytest.raises(SchemaError, match=message):
        ExplainResult.from_json(data)


def test_load_names_the_path(tmp_path):
    with pytest.raises(SchemaError, match="cannot read .*missing.json"):
        load_explain(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SchemaError, match="bad.json is not JSON"):
        load_explain(tmp_path / "bad.json")


def test_explain_needs_a_reference():
    baseline = AuditResult("quick", dataclasses.asdict(RunnerOptions()),
                           probe_from(golden_facts(DEBIAN_FACTS)), None)
    with pytest.raises(ConfigError, match="explain needs a baseline audit with a target and a "
                                          "reference"):
        explain(baseline, record(baseline))
    with pytest.raises(ValueError, match="rounds and max_iterations must be >= 1"):
        ProfileOptions(rounds=0)


@pytest.mark.parametrize("seconds, text", [(3.9, "3.9 s"), (0.045, "45 ms"), (2e-5, "20 µs"),
                                           (-0.0123, "-12.3 ms"), (0.0, "0 µs")])
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


def test_terminal_output_names_the_operator_and_the_trial():
    result = document()
    assert op_sentence(result.overall) == "aten::addmm: 100 % of the difference, 3.9 s vs 45 ms"
    console = Console(record=True, width=240)
    print_explain(console, result)
    text = console.export_text()
    assert "Largest: aten::addmm: 100 % of the difference, 3.9 s vs 45 ms" in text
    assert "BLAS or oneDNN (GEMM)" in text
    assert ("trial 1: OMP_NUM_THREADS=2: other rows 30 % -> 55 % of the reference (partly "
            "recovered); child: intra-op threads: 2") in text
    assert "not tried: blas-provider-path (blas-not-mkl): no other provider" in text
    assert "rebuild: the remaining gap is build-time" in text


def test_a_blas_finding_gains_the_profile_share():
    blas = Finding("blas-not-mkl", "error", "BLAS is not MKL", {"BLAS_INFO": "generic"},
                   "build against imkl", "https://github.com/easybuilders/easybuild/issues/931")
    other = Finding("march-native", "warning", "-march=native", {}, "drop it", "x")
    annotated = annotate_findings([blas, other], document().overall)
    assert annotated[1] is other
    evidence = annotated[0].evidence
    assert evidence["BLAS_INFO"] == "generic"
    head = "profile: BLAS or oneDNN (GEMM)"
    assert evidence[head + ", share of the gap"]["unit"] == "fraction"
    assert round(evidence[head + ", share of the gap"]["value"], 2) == 1.0
    assert evidence[head + ", workload"] == "all workloads"
    assert evidence["profile: largest operator"] == "aten::addmm"
    # values in, text only where it is shown (present/units.py)
    assert evidence_text(evidence[head + ", self CPU per step"]) == "3.9 s vs 45 ms"
    assert evidence_text(evidence["profile: largest operator, share of the gap"]) == "100.0 %"
    assert evidence_text(evidence["profile: largest operator, per step"]) == "3.9 s vs 45 ms"
    assert annotate_findings([blas], None) == (blas,)




def test_diagnosis_findings_gain_the_bert_profile():
    """The real findings of the golden Debian-vs-wheel audit, with a hand-built profile diff:
    the BLAS finding is borne out (BLAS ops hold the gap), the capability one is not."""
    diff = diff_profiles(side("target", DEBIAN_BERT_EVAL), side("reference", WHEEL_BERT_EVAL))
    findings = {f.rule_id: f for f in annotate_findings(
        diagnose(golden_result()), diff)}
    evidence = findings["blas-not-mkl"].evidence
    head = "profile: BLAS or oneDNN (GEMM)"
    assert round(evidence[head + ", share of the gap"]["value"], 2) == 1.01
    assert evidence_text(evidence[head + ", self CPU per step"]) == "830 ms vs 35 ms"
    assert evidence[head + ", workload"] == "bert_layer_infer"
    assert evidence["profile: largest operator"] == "aten::addmm"
    assert round(evidence["profile: largest operator, share of the gap"]["value"], 2) == 0.40
    assert evidence_text(evidence["profile: largest operator, per step"]) == "325 ms vs 10.8 ms"
    assert not any(k.startswith("profile") for k in findings["mkl-missing"].evidence)


def test_vectorised_evidence_when_the_target_is_faster_there():
    diff = diff_profiles(side("target", DEBIAN_BERT_EVAL), side("reference", WHEEL_BERT_EVAL))
    vectorised = profile_evidence(diff, "vectorised")
    head = "profile: ATen vectorised kernels (CPU capability)"
    assert vectorised[head + ", share of the gap"]["value"] <= 0  # the target is not slower
    assert evidence_text(vectorised[head + ", self CPU per step"]) == "160 µs vs 4.05 ms"
    assert "profile: largest operator" not in vectorised
    assert profile_evidence(diff, "conv") == {}
    faster = diff_profiles(side("target", WHEEL_BERT_EVAL), side("reference", DEBIAN_BERT_EVAL))
    blas = profile_evidence(faster, "blas")
    head = "profile: BLAS or oneDNN (GEMM)"
    assert blas[head + ", share of the gap"] == {"value": None, "unit": "fraction"}
    assert evidence_text(blas[head + ", self CPU per step"]) == "35 ms vs 830 ms"
    assert evidence_text(blas[head + ", share of the gap"]) == "unknown"


def test_rule_backends_name_rule_ids_of_the_diagnosis():
    """RULE_BACKENDS keys are rule ids a diagnosis rule emits (a rename breaks this)."""
    sources = "".join(inspect.getsource(importlib.import_module(m))
                      for m in RULE_MODULES if importlib.util.find_spec(m))
    assert sorted(RULE_BACKENDS) == ["blas-not-mkl", "blas-pthreads-with-openmp",
                                     "cpu-capability-low"]
    for rule_id in RULE_BACKENDS:
        assert '"%s"' % rule_id in sources, rule_id


def test_explain_path_and_find_explain(tmp_path):
    assert explain_path("reports/torchperf-1.json") == "reports/torchperf-1.explain.json"
    assert explain_path(tmp_path / "x") == str(tmp_path / "x") + ".explain.json"
    assert find_explain(tmp_path / "a.json") is None
    document().save(tmp_path / "a.explain.json")
    assert find_explain(tmp_path / "a.json") == document()


def test_trials_of_a_one_build_baseline_may_load_that_build_on_both_sides(monkeypatch):
    """An A/A or --target-env baseline (allow_same_torch stored in its options) keeps
    that for its trials, also when explain gives its own trial runner settings (H200:
    `explain --results` of a NVIDIA_TF32_OVERRIDE=0 audit stopped on 'same torch')."""
    import dataclasses as dc

    from eb_torchperf.explain_stage.remedies import BlasHost
    from eb_torchperf.measure.interleave import RunnerOptions
    from eb_torchperf.explain_stage import run as explain_job
    from auditcases import golden_result

    seen = []
    monkeypatch.setattr(explain_job, "run_trials",
                        lambda baseline, before, trials, options, progress:
                        seen.append(options) or [])
    baseline = golden_result()
    one_build = dc.replace(baseline, options=dict(baseline.options, allow_same_torch=True))
    explain_job._try_remedies(one_build, record(one_build), BlasHost(providers=()),
                              RunnerOptions(pairs=1), None)
    explain_job._try_remedies(baseline, record(baseline), BlasHost(providers=()),
                              RunnerOptions(pairs=1), None)
    assert [o.allow_same_torch for o in seen] == [True, False]


def test_explain_gives_the_profiles_the_audits_figure_of_each_model(monkeypatch):
    """A model's profile is checked against the audit's relative OPS of the model
    (explain_stage.profiling re-profiles one that disagrees); a micro workload is not its
    row's size and gets none."""
    import pathlib

    from eb_torchperf.analysis.compare import compare
    from eb_torchperf.records.measurements import load_results
    from eb_torchperf.explain_stage import run as explain_job

    models = pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples" / \
        "debian-vs-wheel-2.13.0-models.json"
    baseline = load_results(str(models))
    seen = {}

    def run_profiles(target, reference, workloads, options, progress, **kwargs):
        seen.update(kwargs, workloads=workloads)
        return [], []
    monkeypatch.setattr(explain_job, "run_profiles", run_profiles)
    explain(baseline, record(baseline), workloads=("dlrm_infer", "resnet50_train", "dlrm"),
            try_remedies=False)
    figures = {c.bench: c.estimate for c in compare(baseline)}
    assert seen["measured"] == {"dlrm_infer": figures["dlrm_infer"],
                                "resnet50_train": figures["resnet50_train"]}
    assert 0.01 < seen["measured"]["dlrm_infer"] < 0.1       # Debian's DLRM: a few %


def test_the_progress_line_says_when_a_model_is_profiled_again():
    from eb_torchperf.present.terminal_explain import ExplainProgress
    console = Console(record=True, width=200)
    ExplainProgress(console)("profile_again", workload="resnet50_infer", profiled=0.101,
                             measured=0.079, factor=0.101 / 0.079)
    assert console.export_text().strip() == (
        "resnet50_infer: profiled at 10.1 % relative OPS where the audit measured 7.9 % "
        "(1.28x apart): profiling it again")
