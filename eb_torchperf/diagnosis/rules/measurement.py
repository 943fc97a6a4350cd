"""Rules about the measurement itself: a busy host, an audit that could not decide.

Why (issue 26): on a 2-core VM with load 3.5-3.9 the wheel pinned to 1 core read
"OK: target at 185.2 % of the reference", and an audit whose 15 rows were all
inconclusive read "OK".  The audit now measures how busy the allowed CPUs were around
every block (measure.contention); a row measured under contention is not decided
(analysis.compare.Comparison.contended), and these findings say why, so every output,
the exit status and the site policy handle it with no special path.
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis import stats
from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.analysis.precision import ADAPTIVE_HALF_WIDTH
from eb_torchperf.diagnosis.rules.scope import affects
from eb_torchperf.present.units import format_percent
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import ProbeResult

SOURCE = "https://github.com/psf/pyperf/blob/main/doc/system.rst"
SOURCE_SPREAD = "https://pyperf.readthedocs.io/en/latest/run_benchmark.html#stable-and-reliable-benchmarks"
#: A node whose typical row cannot see a loss smaller than this (fraction) gets a
#: measurement-undecided warning even when some rows decided: a site asking "is the
#: build within 20 %?" needs to see 20 % losses.
MAX_MIN_DETECTABLE = 0.20
REMEDY_BUSY = ("Measure on an idle host: re-run when the other work has finished, on an "
               "idle node, or in an exclusive Slurm job (sbatch --exclusive); a build host "
               "that is compiling other software cannot tell a slow build from a busy "
               "machine.")


def _paired(comparisons: Sequence[Comparison]) -> List[Comparison]:
    return [c for c in comparisons if c.pairs and c.estimate is not None]


@affects()  # explains no slow row: it says no row decided
def host_busy(target: ProbeResult, reference: Optional[ProbeResult],
              comparisons: Sequence[Comparison]) -> List[Finding]:
    """Other processes used the allowed CPUs while rows were measured (any row
    contended, measure.contention thresholds)."""
    rows = _paired(comparisons)
    busy = [c for c in rows if c.contended]
    if not busy:
        return []
    evidence = {"rows measured under contention": quantity(len(busy), "count",
                                                           total=len(rows)),
                "rows": ", ".join(_label(c) for c in busy[:8]) + (" ..." if len(busy) > 8
                                                                   else "")}
    shares = {key: [c.contention[key] for c in busy if key in c.contention]
              for key in ("other_cpu", "steal", "runq")}
    for key, label, unit in _LOAD_EVIDENCE:
        if shares[key]:
            evidence[label] = quantity(stats.median(shares[key]), unit,
                                       *((min(shares[key]), max(shares[key]))
                                         if unit == "fraction" else ()))
    return [Finding(
        "host-busy", "warning",
        "the host was busy: %d of %d rows were measured while %s; those rows decide "
        "nothing" % (len(busy), len(rows), _busy_how(shares)),
        evidence, REMEDY_BUSY, SOURCE, "target")]


_LOAD_EVIDENCE = (("other_cpu", "other processes' CPU share", "fraction"),
                  ("steal", "CPU time the hypervisor gave other guests (steal)", "fraction"),
                  ("runq", "other tasks waiting for a CPU", "count"))


def _busy_how(shares) -> str:
    """What kept the CPUs busy, in words, from the contended rows' median loads."""
    other = stats.median(shares["other_cpu"]) if shares["other_cpu"] else 0.0
    steal = stats.median(shares["steal"]) if shares["steal"] else 0.0
    if steal > other:
        return ("the hypervisor gave other guests the CPUs (steal: median %s of their "
                "time)" % format_percent(steal, 0))
    if other or not shares["runq"]:
        return ("other processes used the CPUs (median %s of the allowed CPUs' time)"
                % format_percent(other, 0))
    return "other processes' tasks waited for the CPUs"


@affects()
def measurement_undecided(target: ProbeResult, reference: Optional[ProbeResult],
                          comparisons: Sequence[Comparison]) -> List[Finding]:
    """No row decided, or the node's between-process spread hides losses larger than
    MAX_MIN_DETECTABLE in the typical row (the median; significant rows see all)."""
    rows = _paired(comparisons)
    if not rows:
        return []
    decided = [c for c in rows if c.relative_ops is not None]
    spreads = [c.spread for c in rows if c.spread is not None and not c.contended]
    # a significant row is answered however wide its interval (3 % [2-5 %]): it counts
    # as seeing everything; the typical row decides whether the node is too noisy
    detect = [0.0 if c.significant else c.min_detectable for c in rows
              if c.significant or c.min_detectable is not None]
    typical_loss = stats.median(detect) if detect else None
    if decided and (typical_loss is None or typical_loss <= MAX_MIN_DETECTABLE):
        return []
    spread = stats.median(spreads) if spreads else None
    pairs = stats.pairs_for(spread, ADAPTIVE_HALF_WIDTH) if spread else None
    evidence = {"rows decided": quantity(len(decided), "count", total=len(rows))}
    if spread is not None:
        evidence["between-process spread (median row)"] = quantity(spread, "fraction")
    if typical_loss is not None:
        evidence["smallest loss a row can see (median row)"] = quantity(typical_loss,
                                                                        "fraction")
    title = ("the audit could not decide: no row's interval was narrow and clear enough"
             if not decided else
             "this node is too noisy for small losses: its rows vary %s between processes, "
             "a loss smaller than %s cannot be seen" % (
                 "±" + format_percent(spread, 0) if spread else "widely",
                 format_percent(typical_loss, 0)))
    if all(c.contended for c in rows):
        title += " (every row was measured on a busy host)"
    advice = ("Run with --pairs %d (pairs of fresh processes per row, from this node's "
              "spread) or on an idle node; an undecided audit shows neither a slow nor "
              "a good build." % pairs if pairs else
              "Run on an idle node, with more pairs (--pairs); an undecided audit shows "
              "neither a slow nor a good build.")
    return [Finding("measurement-undecided", "warning", title, evidence, advice,
                    SOURCE_SPREAD, "target")]


def _label(c: Comparison) -> str:
    params = " ".join("%s=%s" % kv for kv in sorted(c.params.items()))
    return "%s%s" % (c.bench, " " + params if params else "")


RULES = [host_busy, measurement_undecided]
