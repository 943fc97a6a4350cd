"""Confirm by default (issue 29): the audit itself runs the difference trials.

When the diagnosis leaves an `unexplained-slowdown` and the two sides differ in
settings that can change at run time, the audit re-runs only the finding's rows with
those differences removed (explain_stage/difftrials.py plans the trials, one worker pair
each) within a bounded share of its own wall time: `budget_s` (default
max(MIN_BUDGET_S, BUDGET_SHARE x the audit's wall time)).  Many differences are
bisected: all of them together first (nothing recovers: none of them is the cause,
stop), then halves, down to the one that recovers the rows.  Build settings are never
tried: difftrials lists them as "cannot be changed at run time" with their values.
The outcome is an explain document without profiles, so every report format shows the
trials and `difftrials.confirm` turns the finding into `slowdown-cause-confirmed`.
"""

import dataclasses
import datetime
import socket
import time
from typing import Callable, List, Optional, Sequence

from eb_torchperf.records.analysis import Analysis
from eb_torchperf.explain_stage import difftrials
from eb_torchperf.explain_stage.explanation import ExplainResult
from eb_torchperf.explain_stage.remedies import Trial
from eb_torchperf.explain_stage.trials import TrialResult
from eb_torchperf.measure.interleave import RunnerOptions
from eb_torchperf.records.measurements import AuditResult

#: The trial share: at least this many seconds ...
MIN_BUDGET_S = 30.0
#: ... or this share of the audit's wall time, whichever is larger (issue 29).
BUDGET_SHARE = 0.30
RECOVERED = ("recovered", "partly recovered")


def trial_budget(result: AuditResult, budget_s: Optional[float] = None) -> float:
    """Seconds the trials may take: `budget_s`, else max(30 s, 30 % of the audit)."""
    if budget_s is not None:
        return budget_s
    return max(MIN_BUDGET_S, BUDGET_SHARE * (result.wall_s or 0.0))


def _options(result: AuditResult) -> RunnerOptions:
    """The audit's runner settings with one pair and no extra pairs (as explain)."""
    fields = {f.name for f in dataclasses.fields(RunnerOptions)}
    one_pair = dict(result.options, pairs=1, max_pairs=1)
    options = RunnerOptions(**{k: v for k, v in one_pair.items() if k in fields})
    same = bool(result.options.get("allow_same_torch"))
    return dataclasses.replace(options, allow_same_torch=options.allow_same_torch or same)


class _Budget:
    """Runs trials one at a time until the deadline; remembers what it ran."""

    def __init__(self, run_one: Callable[[Trial], TrialResult], seconds: float,
                 log: Callable[[str], None] = print):
        self.run_one, self.log = run_one, log
        self.deadline = time.monotonic() + seconds
        self.ran: List[TrialResult] = []
        self.spent = False

    def recovers(self, trial: Trial) -> Optional[bool]:
        """Run `trial`; True/False whether it recovered the rows, None: no time left."""
        if time.monotonic() >= self.deadline:
            self.spent = True
            return None
        outcome = self.run_one(trial)
        self.ran.append(outcome)
        self.log("trial %d (%s): %s" % (len(self.ran), trial.label, outcome.verdict))
        return outcome.verdict in RECOVERED


def bisect(singles: Sequence[Trial], budget: _Budget) -> None:
    """All differences together, then halves, down to the one that recovers the rows
    (a half that does not recover sends the search to the other half)."""
    if len(singles) == 1:
        budget.recovers(singles[0])
        return
    if not budget.recovers(difftrials.combine(singles)):
        return
    candidates = list(singles)
    while len(candidates) > 1:
        half = candidates[:len(candidates) // 2]
        verdict = budget.recovers(difftrials.combine(half) if len(half) > 1 else half[0])
        if verdict is None:
            return
        candidates = half if verdict else candidates[len(half):]
    if not any(r.trial == candidates[0] for r in budget.ran):
        budget.recovers(candidates[0])


def confirm_step(result: AuditResult, analysis: Analysis,
                 run_one: Callable[[Trial], TrialResult],
                 budget_s: Optional[float] = None, log: Callable[[str], None] = print
                 ) -> Optional[ExplainResult]:
    """The trials that name the cause of an unexplained slowdown, as an explain
    document (no profiles); None when there is nothing to try (no such finding, or no
    difference that can change at run time: an A/A audit never runs one).

    Args:
        result: the diagnosed audit (findings attached), complete.
        analysis: its records.analysis.Analysis (the differences to try).
        run_one: runs one Trial against the audit (explain_stage.profiling.run_trials).
        budget_s: seconds for the trials (trial_budget's default when None).
        log: one line of news per step.
    """
    if not result.complete or result.target is None or result.reference is None:
        return None
    trials, skipped = difftrials.plan_difference_trials(result, analysis.differences)
    singles = [t for t in trials if len(t.remedy_ids) == 1]
    if not singles:
        return None
    seconds = trial_budget(result, budget_s)
    log("confirming the cause: %d run-time difference%s, at most %.0f s of trials"
        % (len(singles), "" if len(singles) == 1 else "s", seconds))
    started = time.monotonic()
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    budget = _Budget(run_one, seconds, log)
    bisect(singles, budget)
    if budget.spent:
        skipped = list(skipped) + [{"remedy_id": "trials", "rule_id": difftrials.CONFIRMED,
                                    "reason": "trial budget of %.0f s spent" % seconds}]
    return ExplainResult(result.target.python, result.reference.python, None, (),
                         tuple(budget.ran), tuple(skipped), (), (),
                         time.monotonic() - started, 0.0, created, socket.gethostname())


def audit_runner(result: AuditResult, analysis: Analysis, progress: Optional[Callable] = None
                 ) -> Callable[[Trial], TrialResult]:
    """run_one for confirm_step: one trial through explain_stage.profiling.run_trials with
    the audit's runner settings and one pair."""
    from eb_torchperf.explain_stage.profiling import run_trials
    options = _options(result)
    return lambda trial: run_trials(result, analysis.comparisons, [trial], options,
                                    progress)[0]
