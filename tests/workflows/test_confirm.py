"""Confirm by default (explain_stage/confirm.py): bisection, budget, when nothing runs."""

import dataclasses

from eb_torchperf.explain_stage import difftrials
from eb_torchperf.explain_stage.remedies import Trial
from eb_torchperf.explain_stage.trials import TrialResult
from eb_torchperf.explain_stage import confirm
from auditcases import golden_result
from testdata import record


def single(key):
    return Trial((difftrials.PREFIX + key,), (difftrials.UNEXPLAINED,), "unset " + key,
                 {key: None}, {"env": {key: None}}, ("matmul_fp32",))


def runner(cause):
    """run_one that recovers the rows exactly when the trial removes `cause`."""
    ran = []

    def run_one(trial):
        ran.append(trial.env)
        verdict = "recovered" if cause in trial.env else "no gain"
        return TrialResult(trial, True, "", (), verdict)
    return run_one, ran


def budget(run_one, seconds=60.0):
    return confirm._Budget(run_one, seconds, log=lambda line: None)


def test_one_difference_is_tried_alone():
    run_one, ran = runner("A")
    confirm.bisect([single("A")], budget(run_one))
    assert ran == [{"A": None}]


def test_many_differences_are_bisected_to_the_cause():
    run_one, ran = runner("C")
    spent = budget(run_one)
    confirm.bisect([single(k) for k in "ABCD"], spent)
    # all four, then A+B (no gain: the cause is in C, D), then C alone
    assert ran == [dict.fromkeys("ABCD"), dict.fromkeys("AB"), {"C": None}]
    assert [r.verdict for r in spent.ran] == ["recovered", "no gain", "recovered"]


def test_nothing_recovers_together_stops_after_one_trial():
    run_one, ran = runner("Z")
    confirm.bisect([single(k) for k in "ABC"], budget(run_one))
    assert ran == [dict.fromkeys("ABC")]


def test_a_spent_budget_runs_nothing_more():
    run_one, ran = runner("A")
    spent = budget(run_one, seconds=0.0)
    confirm.bisect([single(k) for k in "AB"], spent)
    assert ran == [] and spent.spent


def test_budget_default_is_30_s_or_30_percent_of_the_audit():
    result = golden_result()
    assert confirm.trial_budget(dataclasses.replace(result, wall_s=50.0)) == 30.0
    assert confirm.trial_budget(dataclasses.replace(result, wall_s=300.0)) == 90.0
    assert confirm.trial_budget(result, budget_s=5.0) == 5.0


def test_no_unexplained_slowdown_no_trial():
    run_one, ran = runner("A")
    result = dataclasses.replace(golden_result(), findings=())
    assert confirm.confirm_step(result, record(result), run_one, log=lambda line: None) is None
    assert ran == []


def test_a_confirmed_trial_becomes_the_cause_in_the_findings():
    run_one, _ = runner("OMP_NUM_THREADS")
    spent = budget(run_one)
    confirm.bisect([single("OMP_NUM_THREADS")], spent)
    finding = dataclasses.replace(golden_result().findings[0], rule_id=difftrials.UNEXPLAINED)
    confirmed = difftrials.confirm([finding], spent.ran)
    assert confirmed[0].rule_id == difftrials.CONFIRMED
    assert confirmed[0].evidence["cause"] == ["OMP_NUM_THREADS"]


def test_pipeline_saves_the_confirming_trials_beside_the_results(tmp_path, monkeypatch):
    import sys
    from eb_torchperf.explain_stage.explanation import ExplainResult
    from eb_torchperf.workflows import pipeline
    from eb_torchperf.workflows.request import AuditRequest
    measured = golden_result()
    monkeypatch.setattr(pipeline, "measure", lambda plan, display: measured)
    asked = []
    monkeypatch.setattr(pipeline, "confirm_trials",
                        lambda request, result, analysis, display: asked.append(
                            request.trial_budget_s)
                        or ExplainResult(result.target.python, result.reference.python))
    out = tmp_path / "audit.json"
    request = AuditRequest(target=sys.executable, reference=sys.executable, out=str(out),
                           formats=("md",), trial_budget_s=7.0)
    outcome = pipeline.run(request)
    assert asked == [7.0]
    assert outcome.explain_path == str(tmp_path / "audit.explain.json")
    assert (tmp_path / "audit.explain.json").exists() and (tmp_path / "audit.md").exists()
    no_trials = dataclasses.replace(request, trials=False, out=str(tmp_path / "b.json"))
    assert pipeline.run(no_trials).explain_path == "" and asked == [7.0]
