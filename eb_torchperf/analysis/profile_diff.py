"""Align per-operator profiles of target and reference and attribute the extra time.

Input: the probe's `profile` replies (self CPU seconds per ATen operator, from
`torch.profiler` `key_averages()`), one or more per side and workload.  Output: which
operators account for the target's extra time per step ("aten::addmm: 96 % of the
difference"), and which backend each one runs on, so that "BLAS is slow" is read off
the profile rather than guessed from the build config.  Pure: no I/O, no formatting.

Self CPU time is the time an operator spends outside the operators it calls, on the
calling thread; summed over a step's operators it is the step's wall time (minus
Python), so differences add up to the gap between the two sides.
"""

import dataclasses
import math
import statistics
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from eb_torchperf.analysis.op_backends import (  # noqa: F401 (re-exported)
    BACKENDS, INTENSITY_TAG, OP_RENAMES, OTHER, RULE_BACKENDS, Backend, backend_of, base_op,
    canonical_op, tagged_intensity)


SIDES = ("target", "reference")
#: Operators below this share of the gap are left out of `ProfileDiff.top_ops`.
MIN_SHARE = 0.02
TOP_OPS = 8
#: From this many profile requests per side on, WorkloadProfile.from_replies pools
#: them by their median per operator, not their sum.
MEDIAN_POOLING = 3
#: A model workload's profile whose own relative OPS (ProfileDiff.relative_ops) is off
#: the audit's measurement of the same model by more than this factor was taken while
#: the host ran one side slower than during the audit; explain profiles it again
#: (explain_stage.profiling), and models_vs_micro marks a prediction made from it.  On the
#: 2-core VM, profile and audit of the same model agreed within 1.2x but for the
#: wheel's DLRM inference (5.2 % against 3.4 %; issue 17).
PROFILE_AGREEMENT = 1.25

@dataclasses.dataclass(frozen=True)
class OpTime:
    """Self CPU time of one operator per workload step.

    Attributes:
        name: operator name as the profiler printed it ("aten::addmm").
        self_s: self CPU seconds per step.  torch.profiler computes it as the operator's
            total minus its children's, so it can come out slightly negative (seen for
            one operator of the BERT layer on the loaded dev machine); it is kept raw.
        calls: calls per step.
    """

    name: str
    self_s: float
    calls: float


@dataclasses.dataclass(frozen=True)
class WorkloadProfile:
    """One side's profile of one workload, per step, pooled over profile requests.

    Attributes:
        workload: probe.profile.WORKLOADS key.
        side: "target" or "reference".
        iterations: profiled steps pooled.
        wall_s: wall seconds per profiled step (profiler overhead included).
        threads: torch intra-op threads the steps ran with.
        torch_version: torch.__version__ of the side.
        ops: one OpTime per operator name, largest self time first.

    Raises:
        ValueError: unknown side, iterations < 1, a negative wall time, a time not finite.
    """

    workload: str
    side: str
    iterations: int
    wall_s: float
    threads: int
    torch_version: str
    ops: Tuple[OpTime, ...]

    def __post_init__(self):
        if self.side not in SIDES:
            raise ValueError("side must be one of %s, not %r" % (SIDES, self.side))
        if self.iterations < 1:
            raise ValueError("%s: iterations must be >= 1" % self.workload)
        if not all(math.isfinite(t) for t in [self.wall_s] + [op.self_s for op in self.ops]):
            raise ValueError("%s: times must be finite" % self.workload)
        if self.wall_s < 0:
            raise ValueError("%s: wall time must be >= 0" % self.workload)

    @property
    def total_self_s(self) -> float:
        """Sum of the operators' self CPU seconds per step."""
        return sum(op.self_s for op in self.ops)

    @classmethod
    def from_replies(cls, side: str, replies: Sequence[dict]) -> "WorkloadProfile":
        """Pool worker `profile` replies (probe.profile.profile_workload) of one side.

        Per step: one or two replies are pooled as their sum over their steps; from
        MEDIAN_POOLING replies on, each operator's self time and calls, and the wall
        time, are the median over the replies of their per-step values (an operator
        absent from a reply counts 0 there).  So one request that the host slowed down
        does not move the profile: on the shared 2-core VM the wheel's DLRM inference
        step took 4.2 ms per step in one explain run's profile and 2.1 ms in the audit
        before it (issue 17), which moved the model's predicted relative OPS by 1.6x.

        Raises:
            ValueError: no replies, or replies of different workloads.
        """
        if not replies or len({r["workload"] for r in replies}) != 1:
            raise ValueError("need replies of exactly one workload, got %d" % len(replies))
        steps = sum(int(r["iterations"]) for r in replies)
        per_op = [{op["name"]: op for op in r["ops"]} for r in replies]

        def pooled(value) -> float:
            """`value(reply, its ops by name)` pooled per step over the replies."""
            values = [(value(r, ops), int(r["iterations"])) for r, ops in zip(replies, per_op)]
            if len(values) < MEDIAN_POOLING:
                return sum(v for v, _ in values) / steps
            return statistics.median(v / n for v, n in values)

        def op_time(name: str) -> OpTime:
            field = lambda key: pooled(  # noqa: E731
                lambda r, ops: ops[name][key] if name in ops else 0.0)
            return OpTime(name, field("self_cpu_s"), field("calls"))

        names = dict.fromkeys(name for ops in per_op for name in ops)
        ops = tuple(sorted((op_time(name) for name in names),
                           key=lambda op: (-op.self_s, op.name)))
        return cls(replies[0]["workload"], side, steps, pooled(lambda r, ops: r["wall_s"]),
                   int(replies[-1]["threads"]), str(replies[-1]["torch_version"]), ops)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["ops"] = [dataclasses.asdict(op) for op in self.ops]
        return data

    @classmethod
    def from_json(cls, data: dict) -> "WorkloadProfile":
        data = dict(data)
        data["ops"] = tuple(OpTime(**op) for op in data["ops"])
        return cls(**data)


@dataclasses.dataclass(frozen=True)
class OpDiff:
    """One canonical operator, target vs reference, per step.

    Attributes:
        op: canonical operator name.
        names: the profiler names merged into it (renames), sorted.
        target_s, reference_s: self CPU seconds per step (0.0 where absent).
        share: delta_s / the workload's gap; None when the target is not slower.
        backend: Backend.key.
    """

    op: str
    names: Tuple[str, ...]
    target_s: float
    reference_s: float
    share: Optional[float]
    backend: str

    @property
    def delta_s(self) -> float:
        """Extra self CPU seconds per step in the target (negative: target faster)."""
        return self.target_s - self.reference_s


@dataclasses.dataclass(frozen=True)
class BackendShare:
    """The operators of one backend summed: seconds per step and share of the gap."""

    backend: str
    title: str
    depends_on: str
    target_s: float
    reference_s: float
    share: Optional[float]
    ops: Tuple[str, ...]

    @property
    def delta_s(self) -> float:
        return self.target_s - self.reference_s


@dataclasses.dataclass(frozen=True)
class ProfileDiff:
    """Target vs reference profile of one workload (or of several, summed).

    Attributes:
        workload: workload name ("all workloads" for a sum).
        target, reference: the raw per-step profiles.
        ops: one OpDiff per canonical operator, largest extra time first.
        backends: one BackendShare per backend seen, largest extra time first.
    """

    workload: str
    target: WorkloadProfile
    reference: WorkloadProfile
    ops: Tuple[OpDiff, ...]
    backends: Tuple[BackendShare, ...]

    @property
    def gap_s(self) -> float:
        """Extra self CPU seconds per step of the target (negative: target faster)."""
        return self.target.total_self_s - self.reference.total_self_s

    @property
    def relative_ops(self) -> Optional[float]:
        """The profile's own relative OPS of the workload: the reference's self CPU
        seconds per step over the target's (None where a side has no time)."""
        target, reference = self.target.total_self_s, self.reference.total_self_s
        return reference / target if target > 0 and reference > 0 else None

    def disagreement(self, measured: Optional[float]) -> Optional[float]:
        """max(profile / measured, measured / profile) of relative_ops against the
        audit's `measured` relative OPS of the same workload (None where either is
        missing); above PROFILE_AGREEMENT the profile is not the step the audit timed."""
        mine = self.relative_ops
        if not mine or not measured or measured <= 0:
            return None
        return max(mine / measured, measured / mine)

    def top_ops(self, min_share: float = MIN_SHARE, limit: int = TOP_OPS) -> List[OpDiff]:
        """Operators holding at least `min_share` of the gap, at most `limit`."""
        return [d for d in self.ops if d.share is not None and d.share >= min_share][:limit]

    def backend(self, key: str) -> Optional[BackendShare]:
        """The BackendShare of backend `key`, None if no operator ran on it."""
        return next((b for b in self.backends if b.backend == key), None)

    def to_json(self) -> dict:
        """Raw profiles plus the derived rows (recomputed, not read, by from_json)."""
        return {"workload": self.workload, "gap_s": self.gap_s,
                "target": self.target.to_json(), "reference": self.reference.to_json(),
                "ops": [dict(dataclasses.asdict(d), delta_s=d.delta_s) for d in self.ops],
                "backends": [dict(dataclasses.asdict(b), delta_s=b.delta_s)
                             for b in self.backends]}

    @classmethod
    def from_json(cls, data: dict) -> "ProfileDiff":
        return diff_profiles(WorkloadProfile.from_json(data["target"]),
                             WorkloadProfile.from_json(data["reference"]), data["workload"])


def align(target: WorkloadProfile, reference: WorkloadProfile
          ) -> Dict[str, Tuple[float, float, Tuple[str, ...]]]:
    """Per canonical operator: (target s/step, reference s/step, profiler names merged).
    The calls of one GEMM operator at every intensity are one operator here (its names
    keep the probe's tags); model_prediction reads the tags off the raw profiles."""
    rows: Dict[str, list] = {}
    for index, profile in enumerate((target, reference)):
        for op in profile.ops:
            row = rows.setdefault(base_op(canonical_op(op.name)), [0.0, 0.0, set()])
            row[index] += op.self_s
            row[2].add(op.name)
    return {op: (t, r, tuple(sorted(names))) for op, (t, r, names) in rows.items()}


def _share(delta: float, gap: float) -> Optional[float]:
    return delta / gap if gap > 0 else None


def _backend_shares(ops: Iterable[OpDiff], gap: float) -> Tuple[BackendShare, ...]:
    sums: Dict[str, List] = {}
    for d in ops:
        row = sums.setdefault(d.backend, [0.0, 0.0, []])
        row[0] += d.target_s
        row[1] += d.reference_s
        row[2].append(d.op)
    known = {b.key: b for b in BACKENDS + (OTHER,)}
    shares = [BackendShare(key, known[key].title, known[key].depends_on, t, r,
                           _share(t - r, gap), tuple(names[:TOP_OPS]))
              for key, (t, r, names) in sums.items()]
    return tuple(sorted(shares, key=lambda b: (-b.delta_s, b.backend)))


def diff_profiles(target: WorkloadProfile, reference: WorkloadProfile,
                  workload: Optional[str] = None) -> ProfileDiff:
    """Align two profiles and attribute the target's extra time per operator and backend.

    Args:
        target, reference: per-step profiles of the same workload.
        workload: name for the result (default: target.workload).

    Returns:
        ProfileDiff whose op shares sum to 1.0 when the target is slower (operators
        where the target is faster have negative shares), else shares are None.
    """
    gap = target.total_self_s - reference.total_self_s
    ops = [OpDiff(op, names, t, r, _share(t - r, gap), backend_of(op).key)
           for op, (t, r, names) in align(target, reference).items()]
    ops.sort(key=lambda d: (-d.delta_s, d.op))
    return ProfileDiff(workload or target.workload, target, reference, tuple(ops),
                       _backend_shares(ops, gap))


def _summed(side: str, profiles: Sequence[WorkloadProfile], name: str) -> WorkloadProfile:
    totals: Dict[str, List[float]] = {}
    for profile in profiles:
        for op in profile.ops:
            row = totals.setdefault(op.name, [0.0, 0.0])
            row[0] += op.self_s
            row[1] += op.calls
    ops = tuple(sorted((OpTime(n, s, c) for n, (s, c) in totals.items()),
                       key=lambda op: (-op.self_s, op.name)))
    return WorkloadProfile(name, side, min(p.iterations for p in profiles),
                           sum(p.wall_s for p in profiles), profiles[0].threads,
                           profiles[0].torch_version, ops)


def combine_diffs(diffs: Sequence[ProfileDiff], name: str = "all workloads") -> ProfileDiff:
    """One diff over one step of each workload (per-step times summed).

    Raises:
        ValueError: no diffs.
    """
    if not diffs:
        raise ValueError("no profile diffs to combine")
    return diff_profiles(_summed("target", [d.target for d in diffs], name),
                         _summed("reference", [d.reference for d in diffs], name), name)
