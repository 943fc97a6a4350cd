"""The explanation of a measured gap, as data: profile diff, trials, rebuild list.

One `ExplainResult` document (own schema version) lies beside the audit's results JSON
as <stem>.explain.json; the findings of the audit gain the profile's evidence
(`annotate_findings`).  The processes that produce it are in explain_stage/profiling.py.

Schema history (EXPLAIN_SCHEMA_VERSION):
  1 (2026-11-30): first version: profiles (raw per side + derived diff), trials (plan,
    effect evidence, rows before/after, raw trial AuditResult), skipped remedies,
    rebuild list, errors.
"""

import dataclasses
import pathlib
from typing import Dict, Optional, Sequence, Tuple

from eb_torchperf import __version__
from eb_torchperf.analysis.profile_diff import (MIN_SHARE, RULE_BACKENDS, ProfileDiff,
                                               combine_diffs)
from eb_torchperf.explain_stage.trials import TrialResult
from eb_torchperf.errors import SchemaError
from eb_torchperf.records import validate
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import AuditResult, load_document, save_document

EXPLAIN_SCHEMA_VERSION = 1
KIND = "eb_torchperf-explain"


@dataclasses.dataclass(frozen=True)
class ExplainResult:
    """Everything `explain` produced for one baseline audit.

    Attributes:
        target, reference: interpreter paths (from the baseline).
        results_file: path of the baseline audit's results JSON, if saved.
        profiles: one ProfileDiff per workload.
        trials: one TrialResult per remedy trial run.
        skipped: {remedy_id, rule_id, reason} for applicable remedies not tried.
        rebuild: {rule_id, why} for what run-time remedies cannot fix (trials.rebuild_needed).
        errors: {stage, workload, message} of profiling failures.
        wall_s: seconds for profiling and trials; profile_s: of which profiling.
        created_utc: ISO 8601 start time.
    """

    target: str
    reference: str
    results_file: Optional[str] = None
    profiles: Tuple[ProfileDiff, ...] = ()
    trials: Tuple[TrialResult, ...] = ()
    skipped: Tuple[dict, ...] = ()
    rebuild: Tuple[dict, ...] = ()
    errors: Tuple[dict, ...] = ()
    wall_s: float = 0.0
    profile_s: float = 0.0
    created_utc: str = ""
    host: str = ""
    tool_version: str = __version__

    @property
    def overall(self) -> Optional[ProfileDiff]:
        """The profiles summed over one step of each workload, None without profiles."""
        return combine_diffs(self.profiles) if self.profiles else None

    def to_json(self) -> dict:
        overall = self.overall
        return {"schema_version": EXPLAIN_SCHEMA_VERSION, "kind": KIND,
                "tool_version": self.tool_version, "created_utc": self.created_utc,
                "host": self.host, "wall_s": self.wall_s, "profile_s": self.profile_s,
                "target": self.target,
                "reference": self.reference, "results_file": self.results_file,
                "profiles": [p.to_json() for p in self.profiles],
                "overall": overall.to_json() if overall else None,
                "trials": [t.to_json() for t in self.trials], "skipped": list(self.skipped),
                "rebuild": list(self.rebuild), "errors": list(self.errors)}

    @classmethod
    def from_json(cls, data: dict) -> "ExplainResult":
        """Load an explain document ("overall" and derived rows are recomputed).

        Raises:
            SchemaError: not an explain document, unknown schema version, malformed.
        """
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise SchemaError("not an eb_torchperf explain document (kind is not %r)" % KIND)
        if data.get("schema_version") != EXPLAIN_SCHEMA_VERSION:
            raise SchemaError("explain schema version %r is not supported (this eb_torchperf "
                              "reads version %d); re-run explain or upgrade eb_torchperf"
                              % (data.get("schema_version"), EXPLAIN_SCHEMA_VERSION))
        validate.check_explain(data)  # types per field: the first bad one, by its path
        try:
            return cls(
                target=data["target"], reference=data["reference"],
                results_file=data.get("results_file"),
                profiles=tuple(ProfileDiff.from_json(p) for p in data.get("profiles", ())),
                trials=tuple(TrialResult.from_json(t) for t in data.get("trials", ())),
                skipped=tuple(data.get("skipped", ())), rebuild=tuple(data.get("rebuild", ())),
                errors=tuple(data.get("errors", ())), wall_s=float(data.get("wall_s", 0.0)),
                profile_s=float(data.get("profile_s", 0.0)),
                created_utc=data.get("created_utc", ""), host=data.get("host", ""),
                tool_version=data.get("tool_version", ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError("malformed explain document: %s: %s"
                              % (type(exc).__name__, exc)) from None

    def save(self, path) -> None:
        """Write the JSON document to `path` (parent folders are created)."""
        save_document(path, self.to_json())


def profile_evidence(diff: ProfileDiff, backend: str) -> Dict[str, object]:
    """Evidence for a Finding: how much of `diff`'s gap backend `backend` holds.

    Values, as the rules' evidence (records.findings.quantity), e.g.
    {"profile: BLAS or oneDNN (GEMM), share of the gap": quantity(0.98, "fraction"),
    "profile: BLAS or oneDNN (GEMM), self CPU per step": quantity(3.95, "s",
    reference=0.046, workload="all workloads"), "profile: largest operator": "aten::addmm",
    "profile: largest operator, share of the gap": quantity(0.96, "fraction"), ...}.

    Args:
        diff: a profile diff (usually ExplainResult.overall).
        backend: profile_diff.Backend key.

    Returns:
        {} when no operator of that backend ran; the largest operator only when the
        backend holds part of the gap and the operator at least MIN_SHARE of it.  The
        share is None when the target is not slower overall, <= 0 when it is not
        slower in this backend.
    """
    share = diff.backend(backend)
    if share is None:
        return {}
    head = "profile: %s" % share.title
    evidence = {head + ", share of the gap": quantity(share.share, "fraction"),
                head + ", self CPU per step": quantity(share.target_s, "s",
                                                       reference=share.reference_s),
                head + ", workload": diff.workload}
    top = next(d for d in diff.ops if d.backend == backend)
    if share.share is not None and share.share > 0 and (top.share or 0) >= MIN_SHARE:
        evidence["profile: largest operator"] = top.op
        evidence["profile: largest operator, share of the gap"] = quantity(top.share, "fraction")
        evidence["profile: largest operator, per step"] = quantity(
            top.target_s, "s", reference=top.reference_s)
    return evidence


def annotate_findings(findings: Sequence[Finding], diff: Optional[ProfileDiff],
                      rule_backends: Dict[str, str] = RULE_BACKENDS) -> Tuple[Finding, ...]:
    """Add the profile's evidence (profile_evidence) to findings whose rule maps to a backend.

    E.g. a "blas-not-mkl" finding gains "aten::addmm accounts for 96 % of the gap".

    Args:
        findings: diagnosis findings (unchanged when no diff or no matching rule).
        diff: usually ExplainResult.overall.
        rule_backends: diagnosis rule id -> profile_diff.Backend key.
    """
    if diff is None:
        return tuple(findings)
    out = []
    for finding in findings:
        backend = rule_backends.get(finding.rule_id)
        extra = profile_evidence(diff, backend) if backend else {}
        out.append(dataclasses.replace(finding, evidence=dict(finding.evidence, **extra))
                   if extra else finding)
    return tuple(out)


def with_profile_evidence(result: AuditResult, explained: Optional[ExplainResult]
                          ) -> AuditResult:
    """A copy of `result` whose findings carry the profile evidence of `explained`
    (annotate_findings over its overall diff), an unexplained slowdown confirmed by a
    difference trial (difftrials.confirm); `result` itself when explained is None."""
    from eb_torchperf.explain_stage import difftrials  # difftrials imports trials, as we do
    if explained is None:
        return result
    findings = annotate_findings(result.findings, explained.overall)
    return dataclasses.replace(result, findings=difftrials.confirm(findings, explained.trials))


def explain_path(results_path) -> str:
    """Where the explain document of a results JSON lives: <stem>.explain.json beside it."""
    text = str(results_path)
    stem = text[:-5] if text.endswith(".json") else text
    return stem + ".explain.json"


def find_explain(results_path) -> Optional[ExplainResult]:
    """The explain document beside a results JSON (explain_path), None when there is none.

    Raises:
        SchemaError: the file exists but is not a readable explain document.
    """
    path = explain_path(results_path)
    return load_explain(path) if pathlib.Path(path).is_file() else None


def stale_reason(explained: ExplainResult, result) -> Optional[str]:
    """Why an explain document found beside a results file is not about that audit
    (another target or reference interpreter, or started before the audit was), None
    when it fits.  An audit re-run into the same --out path leaves the old one there."""
    target = result.target.python if result.target else None
    reference = result.reference.python if result.reference else None
    if (explained.target, explained.reference) != (target, reference):
        return "it explains %s against %s, this audit %s against %s" % (
            explained.target, explained.reference, target, reference)
    if explained.created_utc and result.created_utc and explained.created_utc < result.created_utc:
        return "it was made at %s, before this audit (%s)" % (explained.created_utc,
                                                              result.created_utc)
    return None


def load_explain(path) -> ExplainResult:
    """Read an explain JSON file.

    Raises:
        SchemaError: unreadable, not JSON, or not an explain document (names the path).
    """
    return load_document(path, ExplainResult.from_json)
