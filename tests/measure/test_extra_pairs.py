"""Extra pairs (issue 26): rows whose verdict is at stake first, narrowest first; both
sides prepare a CPU row at once, a GPU row one after the other."""

import math

from eb_torchperf.analysis.compare import needs_more_pairs
from eb_torchperf.measure.extra_pairs import (audit_budget_s, extra_plan, failed_rows,
                                            row_key)
from eb_torchperf.measure.interleave import AuditRun, RunnerOptions
from eb_torchperf.measure import options as options_mod
from eb_torchperf.probe import registry
from eb_torchperf.records.measurements import BenchResult

PLAN = [("matmul_fp32", {"n": 512}), ("layernorm", {}), ("gelu", {}), ("dispatch", {})]


def _result(bench, side, pair, seconds, params=None):
    return BenchResult(bench=bench, params=params if params is not None else {}, side=side,
                       pair=pair, number_per_run=1, blocks_s=tuple((s,) for s in seconds),
                       work=1.0, work_unit="op")


def _both(bench, ratios, params=None):
    """Pairs whose reference/target time ratios are `ratios` (3 rounds each)."""
    out = []
    for pair, ratio in enumerate(ratios):
        out.append(_result(bench, "target", pair, [1.0, 1.0, 1.0], params))
        out.append(_result(bench, "reference", pair, [ratio, ratio * 1.001, ratio], params))
    return out


def _ranked(ranks):
    """A judge that answers from {bench: rank} (None: decided)."""
    return lambda target, reference, half: ranks[target[0].bench]


def _results():
    return [r for name, params in PLAN for r in _both(name, [1.0, 1.0, 1.0], params)]


def test_the_lowest_rank_gets_the_budget_first_in_plan_order():
    cost = {row_key(n, p): 1.0 for n, p in PLAN}
    judge = _ranked({"matmul_fp32": (1, 0.08), "layernorm": (0, 0.3), "gelu": (0, 0.12),
                     "dispatch": None})
    # 1.5 s buys one row: the narrowest of the inconclusive ones
    assert extra_plan(PLAN, _results(), set(), cost, judge, 0.05, 1.5) == [("gelu", {})]
    # 3 s: both inconclusive rows before the decided-but-wide matmul row
    assert extra_plan(PLAN, _results(), set(), cost, judge, 0.05, 2.5) == [
        ("layernorm", {}), ("gelu", {})]
    assert extra_plan(PLAN, _results(), set(), cost, judge, 0.05, 9.0) == [
        ("matmul_fp32", {"n": 512}), ("layernorm", {}), ("gelu", {})]


def test_the_budget_counts_rows_measured_not_rows_planned():
    # 4 rows measured (both sides, 3 pairs): 4 x 4 s; a planned GPU row that no side
    # could run has no result and adds nothing (it raised the VM's 67 s to 101 s)
    per_row = RunnerOptions(row_budget_s=4.0, gpu_row_budget_s=5.5).row_budget_for
    by_bench = lambda bench: per_row(registry.load_suites()[bench].device)
    assert audit_budget_s(_results(), by_bench, 10.0) == 16.0
    # a GPU row measured, on one side or both, adds the GPU row budget
    one_sided = _results() + [_result("gemm_cuda", "target", 0, [1.0])]
    assert audit_budget_s(one_sided, by_bench, 10.0) == 21.5
    assert audit_budget_s(_results()[:2], by_bench, 10.0) == 10.0  # at least the minimum
    assert audit_budget_s([], by_bench, 0.0) == 0.0
    assert RunnerOptions(row_budget_s=4.0).row_budget_for("cuda") == 4.0
    # a slow target whose 3 pairs took 53 s of a 64 s budget: extra pairs get 26.5 s more
    assert audit_budget_s(_results(), lambda bench: 16.0, 10.0, first_pairs_s=53.0) == 79.5
    assert audit_budget_s(_results(), lambda bench: 16.0, 10.0, first_pairs_s=28.0) == 64.0


def test_rows_that_failed_on_a_side_are_known_by_their_parameters():
    errors = [{"side": "target", "bench": "conv3x3", "params": {"hw": 56}, "message": "x"},
              {"side": "reference", "bench": "gelu", "params": None, "message": "y"},
              {"side": None, "pair": 2, "message": "worker died"}]
    assert failed_rows(errors) == {row_key("conv3x3", {"hw": 56}), row_key("gelu", {})}


def test_failed_unmeasured_and_unaffordable_rows_get_no_pair():
    cost = {row_key(n, p): 1.0 for n, p in PLAN if n != "layernorm"}
    cost[row_key("gelu", {})] = 5.0
    judge = _ranked({"matmul_fp32": (0, 0.2), "layernorm": (0, 0.1), "gelu": (0, 0.1),
                     "dispatch": (0, 0.3)})
    failed = {row_key("dispatch", {})}
    assert extra_plan(PLAN, _results(), failed, cost, judge, 0.05, 3.0) == [
        ("matmul_fp32", {"n": 512})]


def test_needs_more_pairs_ranks_inconclusive_and_significant_rows_before_wide_ones():
    wide_but_decided = _both("dispatch", [1.01, 1.08, 0.93, 0.99, 1.06, 0.95])  # ±6 %
    inconclusive = _both("dispatch", [1.0, 1.4, 0.75])                 # ±40 %
    just_significant = _both("dispatch", [0.90, 0.93, 0.90, 0.92, 0.89, 0.97])
    decided = _both("dispatch", [1.0, 1.01, 0.995, 1.0])               # ±1 %
    assert needs_more_pairs(*_sides(decided), 0.05) is None
    rank, half = needs_more_pairs(*_sides(wide_but_decided), 0.05)
    assert rank == 1 and math.log(1.05) < half < math.log(1.10)
    assert needs_more_pairs(*_sides(inconclusive), 0.05)[0] == 0
    assert needs_more_pairs(*_sides(just_significant), 0.05)[0] == 0


def _sides(results):
    return ([r for r in results if r.side == "target"],
            [r for r in results if r.side == "reference"])


class ConcurrentFakeWorker:
    """A worker double with send/receive (as runner.Worker): logs when each request is
    sent and when its reply is read."""

    def __init__(self, log, python, bundle_dir, label, env, start_timeout_s):
        self.log, self.label, self.hello, self.asked = log, label, None, []

    def start(self):
        self.hello = {"torch_version": "x"}
        return self.hello

    def alive(self):
        return True

    def close(self):
        pass

    def send(self, op, **fields):
        self.log.append(("send", self.label, op))
        self.asked.append(op)
        return op

    def receive(self, timeout_s, what):
        op = self.asked.pop(0)
        self.log.append(("receive", self.label, op))
        return {"ok": True, "facts": {"torch": {"version": "x"}}, "reason": None,
                "number": 1, "per_call_s": 0.001, "times_s": [0.001]}

    def request(self, op, timeout_s, **fields):
        return self.receive(timeout_s, self.send(op, **fields))


def _prepare_log(only, pairs=2):
    log = []
    options = RunnerOptions(pairs=pairs, block_s=0.001, warmup_s=0.0, settle_s=0.0,
                            min_rounds=1, max_rounds=1)
    AuditRun("/t", "/r", "quick", options, only=only, devices=("cpu", "cuda"),
             worker_factory=lambda *a: ConcurrentFakeWorker(log, *a)).run()
    return [(what, side) for what, side, op in log if op == "prepare"]


def test_cpu_rows_prepare_on_both_sides_at_once_gpu_rows_in_turn(monkeypatch):
    monkeypatch.setattr(options_mod, "allowed_cores", lambda: 2)
    both = [("send", "target"), ("send", "reference"),
            ("receive", "target"), ("receive", "reference")]
    mirrored = [("send", "reference"), ("send", "target"),
                ("receive", "reference"), ("receive", "target")]
    assert _prepare_log(["matmul_fp32"]) == both + mirrored
    in_turn = [("send", "target"), ("receive", "target"),
               ("send", "reference"), ("receive", "reference")]
    assert _prepare_log(["copy_d2d"], pairs=1) == in_turn
    # one pair: nothing mirrors the first block, so the sides prepare in turn as before
    assert _prepare_log(["matmul_fp32"], pairs=1) == in_turn
    # a many-core host: both pools at once stacked the next blocks' threads (H200)
    monkeypatch.setattr(options_mod, "allowed_cores", lambda: 16)
    assert _prepare_log(["matmul_fp32"])[:4] == in_turn


def test_prepare_together_only_for_cpu_rows_of_several_pairs_on_small_hosts():
    assert options_mod.prepare_together("cpu", 3, cores=options_mod.SMALL_HOST_CORES)
    assert not options_mod.prepare_together("cpu", 3, cores=16)
    assert not options_mod.prepare_together("cuda", 3, cores=2)
    assert not options_mod.prepare_together("cpu", 1, cores=2)

