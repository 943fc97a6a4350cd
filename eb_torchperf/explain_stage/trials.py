"""Remedy trials: plan them from the probe, check each took effect, summarise the gain.

A trial re-runs only the benchmarks a remedy can change, in a fresh target worker with
the remedy's environment, interleaved with the reference as in the audit; its relative
OPS ("after") is set against the baseline audit's ("before").  A trial whose child
does not show the intended setting (another libblas.so.3 mapped, the thread count,
the CPU capability) is "not applied", whatever its timings say.  Pure: no I/O.
"""

import dataclasses
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple

from eb_torchperf.analysis import stats
from eb_torchperf.analysis.compare import AA_FLOOR, Comparison
from eb_torchperf.measure.environ import path_under
from eb_torchperf.records.measurements import AuditResult, ProbeResult, params_key
from eb_torchperf.probe import registry
from eb_torchperf.diagnosis.families import THREADED_BENCHES
from eb_torchperf.explain_stage.remedies import REMEDIES, BlasHost, Remedy, Trial, applicable
from eb_torchperf.diagnosis.facts import (capability_rank, current_capability, mapped,
                                         openmp_libraries, pools, torch_blas_pools)

#: Registry families whose rows are "GEMM rows" in summaries (BLAS sgemm dominates).
GEMM_FAMILIES = ("gemm", "transformer")
#: Why a remedy that applies has nothing to try, by remedy id.
NO_VARIANT_HINTS = {
    "blas-provider-path": "no other libblas.so.3 provider is installed next to the loaded one "
                          "(Debian/Ubuntu: apt-get install libopenblas0-pthread)",
    "blas-flexiblas-backend": "FlexiBLAS lists no other backend (flexiblas list)",
    "blas-threads-1": "the BLAS threading library is not one whose thread variable is known",
}
VERDICTS = ("recovered", "partly recovered", "no effect", "worse", "not applied", "failed")


def _bench_order(names) -> Tuple[str, ...]:
    known = [b for b in THREADED_BENCHES if b in names]
    return tuple(known + sorted(set(names) - set(known)))


def combine_trials(trials: Sequence[Trial]) -> Optional[Trial]:
    """One trial with the first variant of every remedy whose variables do not clash.

    Returns:
        the combined Trial, or None when fewer than two remedies combine.
    """
    env: Dict[str, Optional[str]] = {}
    expect: Dict[str, object] = {}
    parts: List[Trial] = []
    for trial in trials:
        if any(t.remedy_ids == trial.remedy_ids for t in parts):
            continue
        if any(k in env and env[k] != v for k, v in trial.env.items()):
            continue
        env.update(trial.env)
        expect.update(trial.expect)
        parts.append(trial)
    if len(parts) < 2:
        return None
    return Trial(tuple(r for t in parts for r in t.remedy_ids),
                 tuple(dict.fromkeys(r for t in parts for r in t.rule_ids)),
                 " + ".join(t.label for t in parts), env, expect,
                 _bench_order({b for t in parts for b in t.benches}))


def plan_trials(target: ProbeResult, host: BlasHost, remedies: Sequence[Remedy] = REMEDIES,
                measured: Optional[Sequence[str]] = None, combined: bool = True
                ) -> Tuple[List[Trial], List[dict]]:
    """The trials to run for `target`, and the applicable remedies left untried.

    Args:
        target: the target's probe (from the baseline audit).
        host: BLAS alternatives on this machine (remedies.discover_host).
        measured: benchmark names of the baseline; trials re-run only those.
        combined: add one trial with all remedies together when two or more apply.

    Returns:
        (trials, skipped) where skipped holds {remedy_id, rule_id, reason}.
    """
    trials: List[Trial] = []
    skipped: List[dict] = []
    for remedy in applicable(target, remedies):
        benches = tuple(b for b in remedy.benches if measured is None or b in measured)
        variants = remedy.variants(target, host)
        reason = (None if variants else NO_VARIANT_HINTS.get(remedy.id, "nothing to try")) \
            or (None if benches else "none of its benchmarks was measured in the baseline")
        if reason:
            skipped.append({"remedy_id": remedy.id, "rule_id": remedy.rule_id, "reason": reason})
            continue
        trials += [Trial((remedy.id,), (remedy.rule_id,), v.label, v.env, v.expect, benches)
                   for v in variants]
    together = combine_trials(trials) if combined else None
    return trials + ([together] if together else []), skipped


# -- did it take effect? ------------------------------------------------------------------

def _under(path: str, folder: str) -> bool:
    return path_under(path, folder)


def _check_blas_dir(probe: ProbeResult, folder) -> Tuple[bool, str]:
    hits = [p for p in mapped(probe) if _under(p, folder) and "blas" in os.path.basename(p)]
    blas = hits or [p for p in mapped(probe) if "blas" in os.path.basename(p)]
    return bool(hits), "BLAS mapped: %s" % (", ".join(blas) or "none")


def _check_flexiblas(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    pool = next((p for p in pools(probe, "blas") if p.get("internal_api") == "flexiblas"), {})
    current = str(pool.get("current_backend") or "")
    names = {os.path.basename(p) for p in mapped(probe)}
    ok = current.lower() == str(wanted).lower() or os.path.basename(str(wanted)) in names
    return ok, "FlexiBLAS backend: %s" % (current or "unknown")


def _check_threads(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    threads = probe.fact("torch", "intra_op_threads")
    return threads == wanted, "intra-op threads: %s" % threads


def _check_blas_threads(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    counts = [p.get("num_threads") for p in torch_blas_pools(probe)]
    return bool(counts) and all(c == wanted for c in counts), "BLAS threads: %s" % counts


def _check_env(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    env = probe.facts.get("env") or {}
    return all(env.get(k) == v for k, v in wanted.items()), \
        "env: %s" % ", ".join("%s=%s" % (k, env.get(k)) for k in wanted)


def _check_capability(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    current = current_capability(probe)
    return current == wanted, "CPU capability: %s" % current


def _check_capability_above(probe: ProbeResult, floor) -> Tuple[bool, str]:
    current = current_capability(probe)
    rank, floor_rank = capability_rank(current), capability_rank(floor)
    took = rank is not None and floor_rank is not None and rank > floor_rank
    return took, "CPU capability: %s" % current


def _check_openmp(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    runtimes = openmp_libraries(probe)
    return len(runtimes) <= wanted, "OpenMP runtimes: %s" % (", ".join(runtimes) or "none")


def _check_affinity(probe: ProbeResult, wanted) -> Tuple[bool, str]:
    cores = len(probe.fact("cpu", "affinity") or ())
    return cores == wanted, "CPU affinity: %d cores" % cores


#: Variant.expect key -> check(child probe, expected value) -> (took effect, evidence).
EFFECT_CHECKS = {"blas_dir": _check_blas_dir, "flexiblas_backend": _check_flexiblas,
                 "threads": _check_threads, "blas_threads": _check_blas_threads,
                 "env": _check_env, "capability": _check_capability,
                 "capability_above": _check_capability_above, "openmp_runtimes": _check_openmp,
                 "affinity": _check_affinity}


def check_effect(expect: Dict[str, object], probe: Optional[ProbeResult]) -> Tuple[bool, str]:
    """Whether the trial's child shows every expected setting, with the evidence."""
    if probe is None:
        return False, "the trial's target process gave no probe"
    results = [EFFECT_CHECKS[key](probe, value) for key, value in expect.items()]
    return all(ok for ok, _ in results), "; ".join(text for _, text in results)


# -- results ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TrialRow:
    """One re-run benchmark: relative OPS before (baseline) and with the remedy.

    Attributes:
        bench, params: what was measured.
        gemm: the benchmark's family is in GEMM_FAMILIES.
        before: baseline relative OPS (reference = 1.0), None if not in the baseline.
        after: relative OPS with the remedy; after_ci_low/high: its 95 % interval.
    """

    bench: str
    params: Dict[str, object]
    gemm: bool
    before: Optional[float]
    after: Optional[float]
    after_ci_low: Optional[float] = None
    after_ci_high: Optional[float] = None

    @property
    def gain(self) -> Optional[float]:
        """after / before (1.0 = no change), None when either is missing."""
        return self.after / self.before if self.before and self.after else None


def _geomean(values) -> Optional[float]:
    values = [v for v in values if v]
    return stats.geometric_mean(values) if values else None


def judge(applied: bool, error: Optional[str], rows: Sequence[TrialRow],
          floor: float = AA_FLOOR) -> str:
    """The verdict (one of VERDICTS) of a trial from its rows.

    "failed": an error and no rows; "not applied": the child did not show the setting;
    "no effect": the geometric-mean gain (after / before) is within `floor` of 1 (the
    A/A floor: smaller differences are not claimed); "worse"; "recovered" when the
    rows end within `floor` of the reference, else "partly recovered".
    """
    gain = _geomean(r.gain for r in rows)
    if error and not rows:
        return "failed"
    if not applied:
        return "not applied"
    if gain is None or abs(math.log(gain)) <= math.log(1 + floor):
        return "no effect"
    if gain < 1:
        return "worse"
    after = _geomean(r.after for r in rows)
    return "recovered" if after is not None and after >= 1 - floor else "partly recovered"


@dataclasses.dataclass(frozen=True)
class TrialResult:
    """What one remedy trial showed.

    Attributes:
        trial: the planned Trial (environment, benchmarks, rule ids).
        applied: the child showed every expected setting (check_effect).
        effect: the evidence from the child's probe.
        rows: one TrialRow per re-run benchmark.
        verdict: one of VERDICTS (gain judged against the A/A floor, compare.AA_FLOOR).
        audit: the trial's raw AuditResult (None when loaded without it).
        error: the last error of the trial run, if any.
    """

    trial: Trial
    applied: bool
    effect: str
    rows: Tuple[TrialRow, ...]
    verdict: str
    audit: Optional[AuditResult] = None
    error: Optional[str] = None

    def group(self, gemm: bool) -> Optional[Tuple[float, float, int]]:
        """(geomean before, geomean after, rows) over GEMM or other rows; None if none."""
        rows = [r for r in self.rows if r.gemm == gemm and r.before and r.after]
        if not rows:
            return None
        return _geomean(r.before for r in rows), _geomean(r.after for r in rows), len(rows)

    @property
    def residual(self) -> Optional[float]:
        """Geomean relative OPS with the remedy over all its rows (1.0 = no gap left)."""
        return _geomean(r.after for r in self.rows)

    def to_json(self) -> dict:
        return {"trial": self.trial.to_json(), "applied": self.applied, "effect": self.effect,
                "verdict": self.verdict, "error": self.error,
                "rows": [dict(dataclasses.asdict(r), gain=r.gain) for r in self.rows],
                "audit": self.audit.to_json() if self.audit else None}

    @classmethod
    def from_json(cls, data: dict) -> "TrialResult":
        rows = tuple(TrialRow(**{k: v for k, v in r.items() if k != "gain"})
                     for r in data["rows"])
        audit = AuditResult.from_json(data["audit"]) if data.get("audit") else None
        return cls(Trial.from_json(data["trial"]), bool(data["applied"]), data["effect"],
                   rows, data["verdict"], audit, data.get("error"))


def _ratio(c: Comparison) -> Optional[float]:
    """Relative OPS of a row, its estimate where the row is inconclusive: a trial runs
    one worker pair, whose interval is seldom narrow, and before/after is read from the
    estimates (the trial's own interval stays in ci_low/ci_high)."""
    return c.relative_ops if c.relative_ops is not None else c.estimate


def summarize_trial(trial: Trial, baseline: Sequence[Comparison], audit: AuditResult,
                    after: Sequence[Comparison], aa_floor: float = AA_FLOOR) -> TrialResult:
    """Set the trial's relative OPS against the baseline's and judge it.

    Args:
        trial: what was run.
        baseline: comparisons of the baseline audit (the "before").
        audit: the trial's AuditResult (target with the remedy vs the reference).
        after: the trial's comparisons (workflows.analyse.compare_trial(audit, aa_floor)).
        aa_floor: gains within this fraction count as "no effect".
    """
    families = {name: b.family for name, b in registry.load_suites().items()}
    before = {(c.bench, params_key(c.params)): c for c in baseline}
    rows = []
    for c in after:
        old = before.get((c.bench, params_key(c.params)))
        rows.append(TrialRow(c.bench, c.params, families.get(c.bench) in GEMM_FAMILIES,
                             _ratio(old) if old else None, _ratio(c), c.ci_low, c.ci_high))
    applied, effect = check_effect(trial.expect, audit.target)
    error = audit.errors[-1]["message"] if audit.errors else None
    return TrialResult(trial, applied, effect, tuple(rows),
                       judge(applied, error, rows, aa_floor), audit, error)


def _rebuild_hint(remedy: Optional[Remedy], trial: TrialResult) -> str:
    """The remedy's rebuild advice for this trial, "" when it does not apply."""
    if remedy is None or (remedy.rebuild_only_if_not_applied and trial.applied):
        return ""
    return remedy.rebuild


def rebuild_needed(results: Sequence[TrialResult], finding_rule_ids: Sequence[str] = (),
                   remedies: Sequence[Remedy] = REMEDIES,
                   aa_floor: float = AA_FLOOR) -> List[dict]:
    """What the run-time remedies cannot fix: {rule_id, why} per finding or residual gap.

    Args:
        results: the trials run.
        finding_rule_ids: rule ids of the audit's findings (diagnosis), if any: those
            without any trial need an easyconfig change and a rebuild.
        remedies: where each trial's Remedy.rebuild advice is looked up.
        aa_floor: a residual within this fraction of the reference counts as closed.
    """
    tried = {r for t in results for r in t.trial.rule_ids}
    out = [{"rule_id": rule, "why": "no run-time remedy: change the easyconfig and rebuild"}
           for rule in dict.fromkeys(finding_rule_ids) if rule not in tried]
    by_id = {r.id: r for r in remedies}
    for rule in sorted(tried):
        mine = [t for t in results if t.trial.rule_ids == (rule,)]
        hints = sorted({_rebuild_hint(by_id.get(t.trial.remedy_ids[0]), t) for t in mine} - {""})
        if mine and hints and not any(t.verdict in ("recovered", "partly recovered")
                                      for t in mine):
            out.append({"rule_id": rule, "why": "run-time remedies did not help (%s): %s" % (
                ", ".join("%s: %s" % (t.trial.label, t.verdict) for t in mine),
                "; ".join(hints))})
    applied = [t for t in results if t.applied and t.residual]
    combined = [t for t in applied if len(t.trial.remedy_ids) > 1]
    final = combined[-1] if combined else (applied[0] if len(applied) == 1 else None)
    if final is not None and final.residual < 1 - aa_floor:
        out.append({"rule_id": None, "why": "with %s the re-run rows reach %.2f of the "
                    "reference (geometric mean); the remaining gap is build-time" % (
                        "all run-time remedies together" if combined else final.trial.label,
                        final.residual)})
    return out
