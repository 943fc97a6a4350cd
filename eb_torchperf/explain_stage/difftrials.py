"""Confirm a difference by trial: re-run the rows that moved with that one difference
removed.

For an `unexplained-slowdown` finding, every difference between the two sides that
can be changed at run time (differences.Difference.changeable: an environment
variable unset or set as on the reference, the reference's CPU affinity) becomes one
trials.Trial that re-runs only the finding's rows.  A trial that recovers them turns
the finding into `slowdown-cause-confirmed`: "caused by DNNL_MAX_CPU_ISA: conv3x3
33 % -> 99 % when it is unset".  Differences that cannot be changed at run time
(build settings, kernel settings) are listed as such.  No rule for the variable is
needed first.
"""

import dataclasses
from typing import List, Optional, Sequence, Tuple

from eb_torchperf.diagnosis.differences import Difference
from eb_torchperf.diagnosis.evidence import bench_label
from eb_torchperf.present.units import format_percent
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.explain_stage.remedies import Trial
from eb_torchperf.diagnosis.rules.unexplained import RULE_ID as UNEXPLAINED
from eb_torchperf.explain_stage.trials import TrialResult, TrialRow, judge

CONFIRMED = "slowdown-cause-confirmed"
#: Trial ids are "difference:<key>".
PREFIX = "difference:"
#: At most this many difference trials per explain (each re-runs the slow rows once).
MAX_TRIALS = 8
FIRST_CALL = "first CUDA call"


def _unexplained(findings: Sequence[Finding]) -> Optional[Finding]:
    """The unexplained-slowdown finding, or one an earlier explain confirmed (its rows
    are tried again when the results are explained once more)."""
    return next((f for f in findings if f.rule_id in (UNEXPLAINED, CONFIRMED)), None)


def trial_benches(finding: Finding, measured: Sequence[str]) -> Tuple[str, ...]:
    """Benchmark names to re-run for the finding's rows (a first-CUDA-call row alone
    needs one CUDA benchmark, so that the trial's child probes the GPU)."""
    rows = finding.evidence.get("rows") or []
    names = [r["bench"] for r in rows if r.get("bench")]
    for row in rows:
        names += [n.split(" ")[0] for n in row.get("rows_below") or []]
    if not names and any(r.get("row") == FIRST_CALL for r in rows):
        names = [m for m in measured if m.endswith("_cuda")][:1]
    return tuple(dict.fromkeys(n for n in names if n in measured))


def plan_difference_trials(baseline: AuditResult, diffs: Sequence[Difference],
                           findings: Sequence[Finding] = None
                           ) -> Tuple[List[Trial], List[dict]]:
    """Trials for the changeable differences of an audit with an unexplained slowdown.

    Args:
        baseline: the audit (its findings unless `findings` is given).
        diffs: its differences (records.analysis.Analysis.differences).

    Returns:
        (trials, skipped): skipped holds {remedy_id, rule_id, reason} for differences
        that cannot be changed at run time.
    """
    finding = _unexplained(baseline.findings if findings is None else findings)
    if finding is None:
        return [], []
    measured = sorted({r.bench for r in baseline.results})
    benches = trial_benches(finding, measured)
    trials, skipped = [], []
    for diff in diffs:
        if not diff.changeable:
            skipped.append({"remedy_id": PREFIX + diff.key, "rule_id": UNEXPLAINED,
                            "reason": "cannot be changed at run time: " + diff.how})
        elif benches and len(trials) < MAX_TRIALS:
            trials.append(Trial((PREFIX + diff.key,), (UNEXPLAINED,), diff.how,
                                dict(diff.trial_env), dict(diff.expect), benches))
    if len(trials) > 1:
        # each alone may recover only part when two settings slow the same rows
        trials.append(combine(trials))
    return trials, skipped


def combine(trials: Sequence[Trial]) -> Trial:
    """One trial removing every difference of `trials` (single-difference trials of
    one finding) at once: their environments and expected effects merged."""
    env, expect = {}, {}
    for trial in trials:
        env.update(trial.env)
        expect.update({k: dict(expect.get(k, {}), **v) if isinstance(v, dict) else v
                       for k, v in trial.expect.items()})
    return Trial(tuple(t.remedy_ids[0] for t in trials), (UNEXPLAINED,),
                 " + ".join(t.label for t in trials), env, expect, trials[0].benches)


def with_first_call(result: TrialResult, baseline: AuditResult) -> TrialResult:
    """Add the first CUDA call as a row (reference s / target s, before and after) when
    both the baseline and the trial's child measured it; re-judge."""
    audit = result.audit
    if audit is None or audit.target is None or baseline.reference is None:
        return result
    ref = baseline.reference.fact("gpu", "first_call_s")
    before = baseline.target.fact("gpu", "first_call_s") if baseline.target else None
    after = audit.target.fact("gpu", "first_call_s")
    if not ref or not before or not after:
        return result
    rows = result.rows + (TrialRow(FIRST_CALL, {}, False, ref / before, ref / after),)
    return dataclasses.replace(result, rows=rows,
                               verdict=judge(result.applied, result.error, rows))


def is_difference_trial(result: TrialResult) -> bool:
    return any(r.startswith(PREFIX) for r in result.trial.remedy_ids)


def finding_rows(result: TrialResult, finding: Finding) -> TrialResult:
    """The trial with only the rows `finding` named slow (its rows, the rows under a
    slow geometric mean, the first CUDA call), judged again on them: a trial re-runs
    whole benchmarks, and thread_scaling threads=1 at 101 % -> 99 % is no recovery."""
    named = finding.evidence.get("rows") or []
    wanted = {r.get("row") for r in named} | {n for r in named for n in r.get("rows_below") or []}
    kept = tuple(r for r in result.rows if bench_label(r) in wanted)
    if not kept or len(kept) == len(result.rows):
        return result
    return dataclasses.replace(result, rows=kept, verdict=judge(result.applied, result.error, kept))


#: Rows a confirmed cause names in its title; the rest are counted ("and 9 more rows")
#: and listed in the evidence (a CPU-affinity trial recovers 12 rows on a 2-core VM).
TITLE_ROWS = 3


def cause_text(result: TrialResult) -> str:
    """"DNNL_MAX_CPU_ISA: conv3x3 33 % -> 99 %, gelu 66 % -> 100 % (unset ...)": the
    TITLE_ROWS rows that gained most (after / before), in row order, then how many more;
    a benchmark measured with several parameters is named with them; a combined trial
    names every difference ("A and B together: ...")."""
    names = [r.bench for r in result.rows]
    by_gain = sorted(result.rows, key=lambda r: -(r.after or 0) / (r.before or 1))
    shown = {id(r) for r in by_gain[:TITLE_ROWS]}
    figures = ", ".join("%s %s -> %s" % (
        r.bench if names.count(r.bench) == 1 else bench_label(r),
        format_percent(r.before, 0), format_percent(r.after, 0))
        for r in result.rows if id(r) in shown)
    more = len(result.rows) - len(shown)
    figures += " and %d more row%s" % (more, "s" if more > 1 else "") if more else ""
    keys = [r[len(PREFIX):] for r in result.trial.remedy_ids]
    name = keys[0] if len(keys) == 1 else " and ".join(keys) + " together"
    return "%s: %s (%s)" % (name, figures, result.trial.label)


def confirm(findings: Sequence[Finding], results: Sequence[TrialResult]) -> Tuple[Finding, ...]:
    """Replace the unexplained-slowdown finding by `slowdown-cause-confirmed` when a
    difference trial recovered (fully or partly) its rows; else add the trials tried
    to its evidence.  Other findings are returned unchanged."""
    finding = _unexplained(findings)
    if finding is None:
        return tuple(findings)
    tried = [finding_rows(r, finding) for r in results if is_difference_trial(r)]
    if not tried:
        return tuple(findings)
    good = [r for r in tried if r.verdict in ("recovered", "partly recovered")]
    evidence = dict(finding.evidence, trials=[
        {"difference": r.trial.remedy_ids[0][len(PREFIX):], "set": r.trial.label,
         "verdict": r.verdict, "rows": [{"bench": x.bench, "before": x.before, "after": x.after}
                                        for x in r.rows]} for r in tried])
    if not good:
        new = dataclasses.replace(finding, evidence=evidence,
                                  advice=finding.advice + " Trials run: none of the run-time "
                                  "differences recovered the rows; the cause is in a build or "
                                  "system difference.")
    else:
        # a single difference that recovers the rows first, then the fullest recovery
        best = sorted(good, key=lambda r: (r.verdict != "recovered",
                                           len(r.trial.remedy_ids) > 1, -(r.residual or 0)))[0]
        new = dataclasses.replace(
            finding, rule_id=CONFIRMED,
            evidence=dict(evidence, cause=[r[len(PREFIX):] for r in best.trial.remedy_ids]),
            title="Slowdown caused by %s" % cause_text(best),
            advice="Confirmed by trial: with %s the rows %s. Remove the setting where it comes "
                   "from: the module (modextravars / modextrapaths of the easyconfig), the "
                   "site profile, or the job script (for an affinity: the job's CPU binding, "
                   "e.g. Slurm --cpus-per-task / --cpu-bind)." % (
                       best.trial.label, "recover" if best.verdict == "recovered"
                       else "partly recover"))
    return tuple(new if f is finding else f for f in findings)
