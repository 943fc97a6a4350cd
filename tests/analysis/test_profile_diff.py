"""Alignment and attribution of per-operator profiles, on hand-built profiles."""

import pytest

from eb_torchperf.analysis.profile_diff import (OpTime, ProfileDiff, WorkloadProfile, backend_of,
                                       canonical_op, combine_diffs, diff_profiles)

from explain_helpers import DEBIAN_BERT_EVAL, WHEEL_BERT_EVAL


def profile(side, ops, workload="w", iterations=1, version="2.13.0"):
    """A WorkloadProfile from {name: self seconds per step}."""
    return WorkloadProfile(workload, side, iterations, sum(ops.values()), 1, version,
                           tuple(OpTime(name, s, 1.0) for name, s in ops.items()))




@pytest.mark.parametrize("op, backend", [
    ("aten::addmm", "blas"), ("aten::_addmm_activation", "blas"), ("aten::mm", "blas"),
    ("aten::bmm", "blas"), ("aten::linear", "blas"), ("aten::mkldnn_convolution", "conv"),
    ("aten::_slow_conv2d_forward", "conv"), ("aten::convolution_backward", "conv"),
    ("aten::native_layer_norm", "vectorised"), ("aten::_softmax", "vectorised"),
    ("aten::gelu", "vectorised"), ("aten::copy_", "vectorised"),
    ("aten::_embedding_bag", "embedding"), ("aten::_embedding_bag_forward_only", "embedding"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
    ("AddmmBackward0", "autograd"), ("autograd::engine::evaluate_function: MmBackward0", "autograd"),
    ("aten::empty", "other"), ("aten::as_strided", "other"),
])
def test_backend_of_names_the_kernel_family(op, backend):
    assert backend_of(op).key == backend


def test_renamed_operators_align_on_the_current_name():
    target = profile("target", {"aten::thnn_conv2d_forward": 0.30, "aten::empty": 0.01},
                     version="1.10.2")
    reference = profile("reference", {"aten::_slow_conv2d_forward": 0.10, "aten::empty": 0.01})
    diff = diff_profiles(target, reference)
    conv = diff.ops[0]
    assert conv.op == "aten::_slow_conv2d_forward"
    assert conv.names == ("aten::_slow_conv2d_forward", "aten::thnn_conv2d_forward")
    assert (conv.target_s, conv.reference_s) == (0.30, 0.10)
    assert conv.share == pytest.approx(1.0)
    assert canonical_op("aten::_native_batch_norm_legit_no_training") == "aten::native_batch_norm"
    assert canonical_op("aten::addmm") == "aten::addmm"


def test_bert_eval_gap_is_blas():
    diff = diff_profiles(profile("target", DEBIAN_BERT_EVAL, "bert_layer_infer", version="1.13.0a0"),
                         profile("reference", WHEEL_BERT_EVAL, "bert_layer_infer"))
    gap = sum(DEBIAN_BERT_EVAL.values()) - sum(WHEEL_BERT_EVAL.values())
    assert diff.gap_s == pytest.approx(gap) and gap == pytest.approx(0.78581)
    assert [d.op for d in diff.top_ops()] == ["aten::addmm", "aten::_addmm_activation",
                                              "aten::mm"]
    assert diff.top_ops()[0].share == pytest.approx((0.3254 - 0.0108) / gap)
    blas = diff.backend("blas")
    assert blas.target_s == pytest.approx(0.8296) and blas.reference_s == pytest.approx(0.035)
    assert blas.share == pytest.approx((0.8296 - 0.035) / gap)  # > 1: the rest is faster
    assert diff.backends[0].backend == "blas"
    assert sum(d.share for d in diff.ops) == pytest.approx(1.0)
    assert sum(b.share for b in diff.backends) == pytest.approx(1.0)


def test_operator_on_one_side_only_counts_zero_on_the_other():
    target = profile("target", {"aten::bmm": 0.2, "aten::_softmax": 0.1})
    reference = profile("reference", {"aten::_scaled_dot_product_flash_attention_for_cpu": 0.05})
    diff = diff_profiles(target, reference)
    rows = {d.op: d for d in diff.ops}
    assert rows["aten::bmm"].reference_s == 0.0
    assert rows["aten::_scaled_dot_product_flash_attention_for_cpu"].target_s == 0.0
    assert rows["aten::_scaled_dot_product_flash_attention_for_cpu"].share == pytest.approx(-0.2)
    assert diff.ops[-1].op == "aten::_scaled_dot_product_flash_attention_for_cpu"


def test_target_not_slower_has_no_shares():
    diff = diff_profiles(profile("target", {"aten::addmm": 0.1}),
                         profile("reference", {"aten::addmm": 0.2}))
    assert diff.gap_s == pytest.approx(-0.1)
    assert diff.ops[0].share is None and diff.backends[0].share is None
    assert diff.top_ops() == []


def test_top_ops_cut_at_min_share_and_limit():
    # gap 0.826 s: add holds 1.8 %, copy_ 2.5 %
    ops = {"aten::addmm": 0.50, "aten::mm": 0.30, "aten::add": 0.015, "aten::copy_": 0.021}
    diff = diff_profiles(profile("target", ops), profile("reference", {"aten::addmm": 0.01}))
    assert [d.op for d in diff.top_ops(min_share=0.02)] == ["aten::addmm", "aten::mm",
                                                            "aten::copy_"]
    assert [d.op for d in diff.top_ops(limit=1)] == ["aten::addmm"]


def test_from_replies_pools_per_step():
    replies = [{"workload": "dlrm", "iterations": 1, "wall_s": 0.3, "threads": 1,
                "torch_version": "1.13.0a0",
                "ops": [{"name": "aten::addmm", "self_cpu_s": 0.2, "cpu_total_s": 0.2,
                         "calls": 5}]},
               {"workload": "dlrm", "iterations": 3, "wall_s": 0.9, "threads": 1,
                "torch_version": "1.13.0a0",
                "ops": [{"name": "aten::addmm", "self_cpu_s": 0.6, "cpu_total_s": 0.6,
                         "calls": 15},
                        {"name": "aten::_embedding_bag", "self_cpu_s": 0.04,
                         "cpu_total_s": 0.05, "calls": 12}]}]
    pooled = WorkloadProfile.from_replies("target", replies)
    assert pooled.iterations == 4 and pooled.wall_s == pytest.approx(0.3)
    assert pooled.ops[0] == OpTime("aten::addmm", pytest.approx(0.2), 5.0)
    assert pooled.ops[1].self_s == pytest.approx(0.01) and pooled.ops[1].calls == 3.0
    with pytest.raises(ValueError, match="exactly one workload"):
        WorkloadProfile.from_replies("target", replies + [dict(replies[0], workload="x")])


def test_profile_validates():
    with pytest.raises(ValueError, match="side must be one of"):
        profile("wheel", {"aten::mm": 0.1})
    with pytest.raises(ValueError, match="iterations must be >= 1"):
        profile("target", {"aten::mm": 0.1}, iterations=0)
    with pytest.raises(ValueError, match="times must be finite"):
        profile("target", {"aten::mm": float("nan")})
    with pytest.raises(ValueError, match="wall time must be >= 0"):
        WorkloadProfile("w", "target", 1, -1.0, 1, "x", ())
    slightly_negative = profile("target", {"aten::mm": 0.1, "aten::linear": -1e-6})
    assert slightly_negative.total_self_s == pytest.approx(0.1 - 1e-6)


def test_combine_sums_one_step_of_each_workload():
    bert = diff_profiles(profile("target", {"aten::addmm": 0.8}, "bert"),
                         profile("reference", {"aten::addmm": 0.02}, "bert"))
    dlrm = diff_profiles(profile("target", {"aten::addmm": 0.4, "aten::_embedding_bag": 0.01}, "d"),
                         profile("reference", {"aten::addmm": 0.02, "aten::_embedding_bag": 0.03},
                                 "d"))
    both = combine_diffs([bert, dlrm])
    assert both.workload == "all workloads"
    assert both.gap_s == pytest.approx(1.14)
    assert both.backend("blas").share == pytest.approx(1.16 / 1.14)
    assert both.backend("embedding").share == pytest.approx(-0.02 / 1.14)
    with pytest.raises(ValueError, match="no profile diffs"):
        combine_diffs([])


def test_json_round_trip_recomputes_the_diff():
    diff = diff_profiles(profile("target", DEBIAN_BERT_EVAL, "bert_layer_infer"),
                         profile("reference", WHEEL_BERT_EVAL, "bert_layer_infer"))
    data = diff.to_json()
    assert data["ops"][0]["op"] == "aten::addmm"
    assert data["ops"][0]["delta_s"] == pytest.approx(0.3146)
    assert ProfileDiff.from_json(data) == diff


def _reply(addmm_s, iterations=1, embedding_s=None, wall_s=None):
    ops = [{"name": "aten::addmm", "self_cpu_s": addmm_s, "cpu_total_s": addmm_s,
            "calls": 5 * iterations}]
    if embedding_s is not None:
        ops.append({"name": "aten::_embedding_bag", "self_cpu_s": embedding_s,
                    "cpu_total_s": embedding_s, "calls": 4 * iterations})
    return {"workload": "dlrm_infer", "iterations": iterations, "torch_version": "2.13.0",
            "wall_s": addmm_s + (embedding_s or 0) if wall_s is None else wall_s,
            "threads": 2, "ops": ops}


def test_three_replies_pool_by_their_median_so_one_slowed_request_does_not_move_them():
    # issue 17: one request the shared host slowed twofold moved DLRM's profile
    steady = [_reply(0.002, 2, 0.001), _reply(0.008, 1, 0.003), _reply(0.0045, 2, 0.0021)]
    pooled = WorkloadProfile.from_replies("reference", steady)
    assert pooled.iterations == 5
    addmm, embedding = pooled.ops
    assert addmm == OpTime("aten::addmm", pytest.approx(0.00225), 5.0)   # 1, 8, 2.25 ms
    assert embedding.self_s == pytest.approx(0.00105)       # 0.5, 3.0, 1.05 ms
    assert pooled.wall_s == pytest.approx(0.0033)
    # an operator one reply lacks counts 0 there
    lacking = WorkloadProfile.from_replies("reference", [_reply(0.002, 1, 0.001),
                                                         _reply(0.002, 1), _reply(0.002, 1)])
    assert {op.name: op.self_s for op in lacking.ops} == {"aten::addmm": 0.002,
                                                          "aten::_embedding_bag": 0.0}
    # two replies are still their sum over their steps
    two = WorkloadProfile.from_replies("reference", steady[:2])
    assert two.ops[0].self_s == pytest.approx(0.01 / 3)


def test_the_profiles_own_relative_ops_and_its_disagreement_with_the_audit():
    diff = diff_profiles(profile("target", {"aten::addmm": 0.07}),
                         profile("reference", {"aten::addmm": 0.0036}))
    assert diff.relative_ops == pytest.approx(0.0036 / 0.07)            # 5.1 %
    assert diff.disagreement(0.034) == pytest.approx(0.0036 / 0.07 / 0.034)
    assert diff.disagreement(0.1) == pytest.approx(0.1 / (0.0036 / 0.07))
    assert diff.disagreement(None) is None and diff.disagreement(0.0) is None
    empty = diff_profiles(profile("target", {}), profile("reference", {"aten::addmm": 0.1}))
    assert empty.relative_ops is None and empty.disagreement(0.5) is None
