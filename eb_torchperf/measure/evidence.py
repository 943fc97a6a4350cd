"""Evidence the audit keeps beside its timings, collected outside every timed block.

- numerics (probe.numerics): each row's error against float64, asked of the first
  pair's workers right after the row's timed rounds;
- kernels (probe.profile.call_kernels): the ATen operators a row ran on, for the rows
  that record them, asked of the first pair's workers once all of that pair's timed
  blocks are done.  torch.profiler's first start took 4.4-5.5 s on the H200 host and
  left later rows of the same process at 0.60-1.22x their speed (0.96-1.11x without
  it, 5 processes each, issue 26): asked in the middle of a pair, as before, it moved
  the rows measured after it (bert_layer_infer's first pair read 0.06x and 16x of its
  other pairs in 2 of 8 A/A audits).
"""

import dataclasses
from typing import Dict, List, Sequence, Tuple

from eb_torchperf.measure.extra_pairs import row_key
from eb_torchperf.measure.runner import exchange, failure
from eb_torchperf.probe import registry
from eb_torchperf.records.measurements import BenchResult


def row_numerics(sides: Sequence, name: str, params: dict, timeout_s: float
                 ) -> Dict[str, dict]:
    """{side label: the row's numerics (probe.worker.op_numerics)} asked of each side's
    worker in turn; a failed check is kept as {"error": message}, the row kept.

    Args:
        sides: objects with .label and .worker (measure.interleave's sides).
    """
    found = {}
    for side in sides:
        (reply,) = exchange([side.worker], "numerics", timeout_s, bench=name, params=params)
        found[side.label] = (reply.get("numerics", {}) if reply.get("ok")
                             else {"error": failure(reply)})
    return found


def with_kernels(results: List[BenchResult], sides: Sequence,
                 plan: Sequence[Tuple[str, dict]], timeout_s: float) -> List[BenchResult]:
    """`results` with the first pair's results of every row of `plan` that records
    kernels (registry.Benchmark.records_kernels) given the kernels its side's worker
    reports (probe.worker.op_kernels; asked of the sides at once); a side whose worker
    fails the request keeps none.

    Raises:
        ProbeError: a worker died or did not answer (runner.exchange).
    """
    results = list(results)
    for name, params in [(n, p) for n, p in plan if registry.REGISTRY[n].records_kernels]:
        key = row_key(name, params)
        found = {i: r for i, r in enumerate(results) if r.pair == 0 and r.key == key}
        asked = [s for s in sides if s.label in {r.side for r in found.values()}]
        if not asked:
            continue
        replies = exchange([s.worker for s in asked], "kernels", timeout_s, bench=name,
                           params=params)
        kernels = {s.label: tuple(reply.get("kernels") or ())
                   for s, reply in zip(asked, replies) if reply.get("ok")}
        for i, result in found.items():
            results[i] = dataclasses.replace(result, kernels=kernels.get(result.side, ()))
    return results
