"""Unpaired comparison of two stored runs."""

import dataclasses
import math

from eb_torchperf.records.measurements import BenchResult
from eb_torchperf.analysis.unpaired import combine_runs, unpaired_comparisons

from auditcases import golden_result


def _with_target_times(result, seconds):
    results = tuple(dataclasses.replace(r, blocks_s=((seconds, seconds),), pair=0)
                    for r in result.results_for("target"))
    return dataclasses.replace(result, results=results)


def test_combine_takes_the_target_side_of_each_run():
    before, after = golden_result(), golden_result()
    combined = combine_runs(before, after)
    assert combined.reference == before.target and combined.target == after.target
    sides = {r.side for r in combined.results}
    assert sides == {"target", "reference"}
    assert len(combined.results) == 2 * len(after.results_for("target"))
    assert combined.findings == ()


def test_unpaired_ratio_of_medians_without_interval():
    before = _with_target_times(golden_result(), 2e-3)
    after = _with_target_times(golden_result(), 1e-3)
    rows = unpaired_comparisons(combine_runs(before, after))
    assert {round(c.relative_ops, 6) for c in rows} == {2.0}
    assert all(c.ci_low is None and c.significant for c in rows)
    close = unpaired_comparisons(combine_runs(_with_target_times(golden_result(), 1.1e-3), after))
    assert all(math.isclose(c.relative_ops, 1.1) and not c.significant for c in close)


def test_a_benchmark_in_one_run_only_has_no_ratio():
    before = golden_result()
    extra = BenchResult("dispatch", {"numel": 1}, "target", 0, 1, ((3e-6,),), 1.0, "op")
    after = dataclasses.replace(golden_result(), results=golden_result().results + (extra,))
    rows = {c.bench: c for c in unpaired_comparisons(combine_runs(before, after))}
    assert rows["dispatch"].relative_ops is None and rows["dispatch"].reference is None
