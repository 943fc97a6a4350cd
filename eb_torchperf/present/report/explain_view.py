"""View model of the report's "Explain" section: profile diff and remedy trials.

Built from an `explain.ExplainResult` (the `<stem>.explain.json` beside the results);
every cell is a display string, so the templates only lay the rows out.  Seconds
and shares use the terminal's formats (terminal.format_seconds / format_share), so
the report reads the same as `eb-torchperf explain` in the terminal.
"""

from typing import List, Optional

from eb_torchperf.present.terminal import format_params, format_ratio, format_seconds, format_share

#: Operators of the overall diff shown in the report (profile_diff.ProfileDiff.top_ops).
REPORT_TOP_OPS = 8


def _workload_rows(result) -> List[dict]:
    rows = []
    for d in result.profiles:
        top = ", ".join("%s %s" % (o.op, format_share(o.share)) for o in d.top_ops(limit=3))
        rows.append({"workload": d.workload, "target": format_seconds(d.target.total_self_s),
                     "reference": format_seconds(d.reference.total_self_s),
                     "extra": format_seconds(d.gap_s), "top": top or "target not slower"})
    return rows


def _operator_rows(overall) -> List[dict]:
    titles = {b.backend: b.title for b in overall.backends}
    return [{"op": o.op, "share": format_share(o.share), "target": format_seconds(o.target_s),
             "reference": format_seconds(o.reference_s), "backend": titles[o.backend]}
            for o in overall.top_ops(limit=REPORT_TOP_OPS)]


def _profile_view(result) -> Optional[dict]:
    overall = result.overall
    if overall is None:
        return None
    slower = overall.gap_s > 0
    gap = ("the target spends %s more self CPU time per step (%s vs %s, one step of each "
           "workload)" if slower else "the target is not slower in the profile (%s vs %s "
           "self CPU time per step, one step of each workload)")
    figures = (format_seconds(overall.target.total_self_s),
               format_seconds(overall.reference.total_self_s))
    return {"workloads": _workload_rows(result),
            "gap": gap % ((format_seconds(overall.gap_s),) + figures if slower else figures),
            "operators": _operator_rows(overall) if slower else []}


def _env_text(env: dict) -> str:
    """{"OMP_NUM_THREADS": "2", "LD_PRELOAD": None} -> "OMP_NUM_THREADS=2, LD_PRELOAD unset"."""
    return ", ".join("%s=%s" % (k, v) if v is not None else "%s unset" % k
                     for k, v in env.items()) or "none"


def _trial_view(index: int, trial) -> dict:
    rows = [{"bench": r.bench, "params": format_params(r.params),
             "before": format_ratio(r.before) or "—", "after": format_ratio(r.after) or "—",
             "interval": ("%s – %s" % (format_ratio(r.after_ci_low), format_ratio(r.after_ci_high))
                          if r.after_ci_low is not None else "")}
            for r in trial.rows]
    return {"number": str(index + 1), "label": trial.trial.label,
            "env": _env_text(trial.trial.env), "rule_ids": ", ".join(trial.trial.rule_ids),
            "applied": "yes" if trial.applied else "no", "effect": trial.effect,
            "verdict": trial.verdict, "error": trial.error or "", "rows": rows}


def explain_view(result) -> dict:
    """The Explain section: profile diff, remedy trials, what needs a rebuild.

    Args:
        result: an explain document (explain.load_explain / explain.explain).

    Returns:
        {"profile": None or {workloads, gap, operators}, "remedies_tried": bool,
        "trials": [...], "skipped": [...], "rebuild": [...], "errors": [...],
        "timing": one line};
        all values display strings or lists of dicts of display strings.
    """
    return {
        "profile": _profile_view(result),
        "remedies_tried": bool(result.trials or result.skipped or result.rebuild),
        "trials": [_trial_view(i, t) for i, t in enumerate(result.trials)],
        "skipped": [{"remedy_id": str(s.get("remedy_id", "")), "rule_id": str(s.get("rule_id", "")),
                     "reason": str(s.get("reason", ""))} for s in result.skipped],
        "rebuild": [{"rule_id": str(r.get("rule_id") or ""), "why": str(r.get("why", ""))}
                    for r in result.rebuild],
        "errors": [str(e.get("message", "")) for e in result.errors],
        "timing": "profiles %.0f s, remedy trials %.0f s (explain started %s)" % (
            result.profile_s, result.wall_s - result.profile_s, result.created_utc or "—"),
    }
