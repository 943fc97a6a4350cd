"""Compare two stored audits (before/after a rebuild, two node types): unpaired.

Each stored run's *target* side is used: run A becomes the reference (100 %), run B
the target.  The runs were not measured interleaved, so slow drift of the machine
between them is not cancelled: relative OPS is a ratio of medians with no interval,
and only differences beyond UNPAIRED_FLOOR are called significant.
"""

import dataclasses
import math
from typing import List

from eb_torchperf.analysis.compare import NOISY_REL_IQR, Comparison, _group, rate_of
from eb_torchperf.records.measurements import AuditResult

#: Smallest difference called significant between two separate runs: sequential
#: (non-interleaved) A/A runs of one build differed by 4-19 % on the 2-core dev
#: machine (audit.py design facts), so 20 %.
UNPAIRED_FLOOR = 0.20
UNPAIRED_NOTE = (
    "Unpaired comparison of two stored runs: %s is the reference (100 %%), %s the target. "
    "The runs were not interleaved, so machine drift between them is not cancelled: relative "
    "OPS is a ratio of medians without an interval, and differences under %d %% are within "
    "what two separate runs of one build differ by.")


def _relabel(records, side: str) -> tuple:
    """Target-side (or side-less) records of one run, relabelled to `side`."""
    return tuple(dict(r, side=side) for r in records if r.get("side") in ("target", None))


def combine_runs(reference_run: AuditResult, target_run: AuditResult) -> AuditResult:
    """One AuditResult: target side from `target_run`, reference side from the target
    side of `reference_run` (findings empty: diagnose it afterwards)."""
    as_reference = tuple(dataclasses.replace(r, side="reference")
                         for r in reference_run.results_for("target"))
    hosts = (reference_run.host, target_run.host)
    return dataclasses.replace(
        target_run, reference=reference_run.target,
        results=tuple(target_run.results_for("target")) + as_reference,
        skipped=(_relabel(target_run.skipped, "target")
                 + _relabel(reference_run.skipped, "reference")),
        errors=_relabel(target_run.errors, "target") + _relabel(reference_run.errors, "reference"),
        complete=reference_run.complete and target_run.complete, findings=(),
        host=hosts[1] if hosts[0] == hosts[1] else "%s → %s" % hosts,
        wall_s=target_run.wall_s)  # B's own: two runs' times added mean nothing


def unpaired_comparisons(result: AuditResult, floor: float = UNPAIRED_FLOOR) -> List[Comparison]:
    """Per benchmark key: rates of both sides and the ratio of their medians.

    Returns:
        Comparisons with relative_ops = reference median / target median, no interval,
        `significant` when the ratio differs from 1 by more than `floor`.
    """
    out = []
    for sides in _group(result.results).values():
        target, reference = sides["target"], sides["reference"]
        first = (target or reference)[0]
        t_rate = rate_of(target) if target else None
        r_rate = rate_of(reference) if reference else None
        noisy = any(rate and rate.rel_iqr > NOISY_REL_IQR for rate in (t_rate, r_rate))
        ratio = r_rate.median_s / t_rate.median_s if t_rate and r_rate else None
        significant = ratio is not None and abs(math.log(ratio)) > math.log(1 + floor)
        out.append(Comparison(first.bench, first.params, t_rate, r_rate, ratio,
                              significant=significant, noisy=noisy))
    return out
