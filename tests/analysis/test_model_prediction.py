"""Models table and the micro-suite's prediction of each model (model_rows, model_prediction)."""

import dataclasses
import math

import pytest

import pathlib
import sys

from auditcases import comparisons

# benchmarks/model_prediction.py serves benchmarks/models_vs_micro.py only (issue 25)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
import model_prediction as mp  # noqa: E402
from eb_torchperf.analysis.model_rows import model_rows, models_geomean, split
from eb_torchperf.present.models_view import interval_text
from eb_torchperf.analysis.profile_diff import OpTime, WorkloadProfile, diff_profiles


def _profile(side, ops, workload="resnet50_infer"):
    ops = tuple(OpTime(name, seconds, 1) for name, seconds in ops)
    return WorkloadProfile(workload, side, 1, sum(s.self_s for s in ops), 2, "x", ops)


#: A resnet50-like profile: the reference spends 60 % in convolution, 20 % in batch
#: norm, 10 % in the classifier GEMM, 10 % in relu / add (self CPU seconds per step).
REFERENCE = [("aten::mkldnn_convolution", 0.06), ("aten::native_batch_norm", 0.02),
             ("aten::addmm", 0.01), ("aten::relu_", 0.005), ("aten::add", 0.005)]
TARGET = [("aten::mkldnn_convolution", 0.9), ("aten::native_batch_norm", 0.05),
          ("aten::addmm", 0.05), ("aten::relu_", 0.01), ("aten::add", 0.01)]


def _diff():
    return diff_profiles(_profile("target", TARGET), _profile("reference", REFERENCE))


def test_families_of_real_operator_names():
    # the im2col + BLAS convolution (torch 1.13 names it thnn_conv2d_forward in older
    # profiles, _slow_conv2d_forward since) and oneDNN's, forward and backward
    assert mp.family_of("aten::thnn_conv2d_forward") == "conv_gemm"
    assert mp.family_of("aten::_slow_conv2d_forward") == "conv_gemm"
    assert mp.family_of("aten::_slow_conv2d_backward") == "conv_gemm_backward"
    assert mp.family_of("aten::mkldnn_convolution") == "conv"
    assert mp.family_of("aten::convolution_backward") == "conv_backward"
    assert mp.family_of("aten::mkldnn_convolution_backward") == "conv_backward"
    assert mp.family_of("aten::_native_batch_norm_legit_no_training") == "batch_norm"
    assert mp.family_of("aten::native_batch_norm_backward") == "batch_norm"
    assert mp.family_of("aten::addmm") == "gemm"
    assert mp.family_of("aten::_embedding_bag") == "embedding"
    assert mp.family_of("aten::gelu") == "vectorised"
    assert mp.family_of("autograd::engine::evaluate_function: AddmmBackward0") == "overhead"
    assert mp.family_of("aten::view") == "overhead"
    # the convolution's dispatcher frames are per-call overhead, not convolution work
    assert [mp.family_of(op) for op in ("aten::conv2d", "aten::convolution",
                                        "aten::_convolution")] == ["overhead"] * 3
    assert mp.family_of("aten::convolution_backward") == "conv_backward"


def test_weights_are_the_reference_time_shares():
    weights = mp.family_weights(_diff())
    assert weights == pytest.approx({"conv": 0.6, "batch_norm": 0.2, "gemm": 0.1,
                                     "vectorised": 0.1})


def test_prediction_is_time_additive_over_the_families_with_rows():
    rows = comparisons(("conv3x3", {"hw": 56}, 0.4), ("conv1x1", {"hw": 56}, 0.1),
                       ("batchnorm", {"mode": "eval"}, 0.5), ("linear", {}, 0.2),
                       ("matmul_fp32", {}, 0.9), ("layernorm", {}, 0.8),
                       ("resnet50_infer", {}, 0.08))
    (prediction,) = mp.predict_all([_diff()], rows)
    conv = math.sqrt(0.4 * 0.1)  # geometric mean of the two conv rows: 20 %
    assert prediction.ratios == pytest.approx({"conv": conv, "batch_norm": 0.5, "gemm": 0.2,
                                               "vectorised": 0.8})
    expected = 1 / (0.6 / conv + 0.2 / 0.5 + 0.1 / 0.2 + 0.1 / 0.8)
    assert prediction.predicted == pytest.approx(expected)  # 18.2 %
    assert prediction.predicted_geomean == pytest.approx(
        math.exp(0.6 * math.log(conv) + 0.2 * math.log(0.5) + 0.1 * math.log(0.2)
                 + 0.1 * math.log(0.8)))
    assert prediction.measured == pytest.approx(0.08)
    assert prediction.factor == pytest.approx(expected / 0.08)
    assert prediction.uncovered == pytest.approx(0.0)
    measured, predicted = mp.geomean_pair([prediction])
    assert (measured, predicted) == pytest.approx((0.08, expected))


def test_families_without_rows_are_left_out_and_reported():
    rows = comparisons(("conv3x3", {}, 0.25), ("resnet50_infer", {}, 0.2))
    (prediction,) = mp.predict_all([_diff()], rows)
    assert prediction.weights == {"conv": 1.0}
    assert prediction.predicted == pytest.approx(0.25)
    assert prediction.uncovered == pytest.approx(0.4)
    # no micro row of any family: no prediction
    assert mp.predict_all([_diff()], comparisons(("resnet50_infer", {}, 0.2))) == []


def test_models_table_folds_the_two_modes_and_splits_the_micro_rows():
    rows = comparisons(("conv3x3", {}, 0.44), ("resnet50_infer", {}, 0.08),
                       ("resnet50_train", {}, 0.07), ("bert_infer", {}, 0.017))
    models, micro = split(rows)
    assert [c.bench for c in micro] == ["conv3x3"]
    table = model_rows(rows)
    assert [(r.model, r.device, r.infer.bench, r.train and r.train.bench) for r in table] == [
        ("resnet50", "cpu", "resnet50_infer", "resnet50_train"),
        ("bert", "cpu", "bert_infer", None)]
    assert models_geomean(rows) == pytest.approx((0.08 * 0.07 * 0.017) ** (1 / 3))
    assert interval_text(table[0].infer) == "%s – %s" % (
        "%.1f %%" % (100 * table[0].infer.ci_low), "%.1f %%" % (100 * table[0].infer.ci_high))
    assert interval_text(None) == ""


def test_a_one_pair_model_row_says_its_interval_comes_from_one_pair():
    from auditcases import bench_pair
    from eb_torchperf.analysis.compare import compare_pair
    target, reference = bench_pair("resnet50_infer", {}, 0.08)
    c = compare_pair([target], [reference])
    assert interval_text(c) == "%.1f %% – %.1f %% (1 pair)" % (100 * c.ci_low, 100 * c.ci_high)
    assert c.ci_low == pytest.approx(0.08 / 1.05) and c.ci_high == pytest.approx(0.08 * 1.05)


def test_one_measured_round_says_it_has_no_interval():
    from auditcases import bench_pair
    from eb_torchperf.analysis.compare import compare_pair
    target, reference = bench_pair("resnet50_train", {}, 0.01, rounds=1)
    c = compare_pair([target], [reference])
    assert c.ci_low is None and c.rounds == 1
    assert interval_text(c) == "1 round: no interval"


def test_the_im2col_convolution_is_predicted_from_the_plain_gemm_row():
    """Debian's torch 1.13 at one thread runs resnet50's 1x1 convolutions on the im2col
    + BLAS path: that share of the step is predicted from matmul_fp32, not the conv rows."""
    reference = [("aten::mkldnn_convolution", 0.05), ("aten::_slow_conv2d_forward", 0.05)]
    target = [("aten::mkldnn_convolution", 0.06), ("aten::_slow_conv2d_forward", 0.8)]
    diff = diff_profiles(_profile("target", target), _profile("reference", reference))
    rows = comparisons(("conv3x3", {}, 0.9), ("matmul_fp32", {}, 0.06), ("linear", {}, 0.03),
                       ("resnet50_infer", {}, 0.11))
    (prediction,) = mp.predict_all([diff], rows)
    assert prediction.weights == pytest.approx({"conv": 0.5, "conv_gemm": 0.5})
    assert prediction.ratios == pytest.approx({"conv": 0.9, "conv_gemm": 0.06})
    assert prediction.predicted == pytest.approx(1 / (0.5 / 0.9 + 0.5 / 0.06))  # 11.2 %


def test_tagged_gemms_are_priced_on_the_gemm_curve_at_their_intensity():
    # alexnet at the models suite's CPU batch 4 (issue 17): the probe tags its classifier
    # GEMMs "2.0 flop/B"; the 256-token linear row (85 flop/B) at 3 % would have
    # predicted a far slower model than the 24-36 % measured
    assert mp.family_of("aten::addmm [2.0 flop/B]") == "gemm@2.0"
    assert mp.family_of("aten::thnn_conv2d_forward [6.4 flop/B]") == "conv_gemm@6.4"
    assert mp.family_of("aten::relu [2.0 flop/B]") == "vectorised"   # not a GEMM family
    rows = comparisons(("matmul_fp32", {"n": 512}, 0.04), ("linear", {"tokens": 256,
                       "in": 1024, "out": 1024}, 0.01),
                       ("linear_small_batch", {"tokens": 4, "in": 4096, "out": 4096}, 0.2),
                       ("conv3x3", {}, 0.5), ("alexnet_infer", {}, 0.3))
    curve = mp.gemm_curve(rows)
    assert [round(x, 1) for x, _ in curve] == [2.0, 85.3]
    assert curve[1][1] == pytest.approx(0.02)        # 85.3 flop/B twice: geometric mean
    assert mp.on_curve(curve, 1.0) == pytest.approx(0.2)
    assert mp.on_curve(curve, 500.0) == pytest.approx(0.02)
    halfway = math.sqrt(2.0 * 85.33)
    assert mp.on_curve(curve, halfway) == pytest.approx(math.sqrt(0.2 * 0.02), rel=1e-3)
    with pytest.raises(ValueError):
        mp.on_curve([], 2.0)
    reference = [("aten::mkldnn_convolution", 0.05), ("aten::addmm [2.0 flop/B]", 0.05)]
    target = [("aten::mkldnn_convolution", 0.1), ("aten::addmm [2.0 flop/B]", 0.25)]
    diff = diff_profiles(_profile("target", target, "alexnet_infer"),
                         _profile("reference", reference, "alexnet_infer"))
    (prediction,) = mp.predict_all([diff], rows)
    assert prediction.weights == pytest.approx({"conv": 0.5, "gemm@2.0": 0.5})
    # 2.0 flop/B lies just above the small-batch row's 1.997
    assert prediction.ratios == pytest.approx({"conv": 0.5, "gemm@2.0": 0.2}, rel=2e-3)
    assert prediction.predicted == pytest.approx(1 / (0.5 / 0.5 + 0.5 / 0.2), rel=2e-3)
    assert sorted(op.backend for op in diff.ops) == ["blas", "conv"]


def test_the_targets_convolution_path_decides_the_split_of_the_conv_share():
    # Debian's torch 1.13 (one thread) runs resnet50's 1x1 convolutions at batch 1 on
    # im2col + BLAS, the wheel (two threads) on oneDNN: the reference has no time on the
    # slow path, so its conv share is split by the target's work on each path
    reference = [("aten::mkldnn_convolution", 0.08), ("aten::native_batch_norm", 0.02)]
    target = [("aten::mkldnn_convolution", 0.1), ("aten::_slow_conv2d_forward", 0.9),
              ("aten::native_batch_norm", 0.04)]
    diff = diff_profiles(_profile("target", target), _profile("reference", reference))
    assert mp.family_weights(diff) == pytest.approx({"conv": 0.8, "batch_norm": 0.2})
    rows = comparisons(("conv3x3", {}, 0.5), ("matmul_fp32", {}, 0.05),
                       ("batchnorm", {"mode": "eval"}, 0.5), ("resnet50_infer", {}, 0.1))
    (prediction,) = mp.predict_all([diff], rows)
    # reference-equivalent work: oneDNN 0.1 s x 50 % = 0.05, slow path 0.9 x 5 % = 0.045
    assert prediction.weights == pytest.approx({"conv": 0.8 * 0.05 / 0.095,
                                                "conv_gemm": 0.8 * 0.045 / 0.095,
                                                "batch_norm": 0.2})
    expected = 1 / (0.8 * 0.05 / 0.095 / 0.5 + 0.8 * 0.045 / 0.095 / 0.05 + 0.2 / 0.5)
    assert prediction.predicted == pytest.approx(expected)
    # without a micro row for the slow path the share stays as the reference has it
    rows = comparisons(("conv3x3", {}, 0.5), ("batchnorm", {"mode": "eval"}, 0.5),
                       ("resnet50_infer", {}, 0.1))
    (prediction,) = mp.predict_all([diff], rows)
    assert prediction.weights == pytest.approx({"conv": 0.8, "batch_norm": 0.2})


def _ran_on(comparison, *kernels):
    """`comparison` with the kernels its target ran (compare.Rate.kernels)."""
    return dataclasses.replace(comparison,
                               target=dataclasses.replace(comparison.target, kernels=kernels))


SLOW, ONEDNN = "aten::_slow_conv2d_forward", "aten::mkldnn_convolution"


def test_conv_rows_the_target_ran_on_im2col_price_the_im2col_convolutions():
    # Debian's 1.13 (one thread) ran the batch-2 1x1 rows on im2col + BLAS and the
    # batch-16 one on oneDNN; the wheel's oneDNN reorders NCHW tensors, so its 16 -> 64
    # expansion at 112x112 costs it more than a GEMM of the same matrices: that row read
    # 74 % where the bottleneck's 256 -> 64 read 4 % (issue 17, 2-core VM)
    expansion = {"batch": 2, "cin": 16, "cout": 64, "hw": 112, "k": 1}
    bottleneck = {"batch": 4, "cin": 256, "cout": 64, "hw": 56, "k": 1}
    big = {"batch": 16, "cin": 1024, "cout": 256, "hw": 14, "k": 1}
    rows = comparisons(("conv1x1", expansion, 0.74), ("conv1x1", bottleneck, 0.04),
                       ("conv1x1", big, 0.5), ("conv3x3", {"channels": 64, "hw": 56}, 0.5),
                       ("conv_depthwise", {"batch": 2, "cin": 72, "cout": 72, "hw": 56,
                                           "k": 3, "depthwise": True}, 0.9),
                       ("matmul_fp32", {"n": 512}, 0.03), ("mobilenet_v3_large_infer", {}, 0.14))
    assert [mp.row_path(c) for c in rows] == [None] * 7      # no kernels recorded
    kernels = [(SLOW,), (SLOW,), (ONEDNN,), (ONEDNN,), (ONEDNN,), (), ()]
    rows = [_ran_on(c, *k) if k else c for c, k in zip(rows, kernels)]
    assert [mp.row_path(c) for c in rows[:5]] == ["conv_gemm", "conv_gemm", "conv", "conv",
                                                  "conv"]
    # the dispatcher's own frames are no path: the first kernel of a path family counts
    assert mp.row_path(_ran_on(rows[0], "aten::copy_", SLOW)) == "conv_gemm"
    curve = mp.conv_curve(rows)
    assert [round(x, 1) for x, _ in curve] == [6.4, 25.2]
    assert [r for _, r in curve] == pytest.approx([0.74, 0.04])
    # the oneDNN family keeps only the rows the target ran on oneDNN
    conv, benches = mp.family_ratios(rows)["conv"]
    assert conv == pytest.approx((0.5 * 0.5 * 0.9) ** (1 / 3))
    assert benches == ("conv3x3", "conv1x1", "conv_depthwise")
    # and the oneDNN rows make the oneDNN curve: a depthwise row (one group's GEMM:
    # 1 x 9 by 9 x 3136, 0.45 flop/B), a 3x3 on 64 channels (28 flop/B), resnet50's
    # 1024 -> 256 at batch 16 (50 flop/B)
    oned = mp.conv_curve(rows, "conv")
    assert [round(x, 2) for x, _ in oned] == [0.45, 28.28, 50.08]
    assert [r for _, r in oned] == pytest.approx([0.9, 0.5, 0.5])
    # the probe tags oneDNN's convolutions too: a depthwise call is priced at 90 %, the
    # im2col calls on the im2col rows' curve
    reference = [(ONEDNN + " [0.45 flop/B]", 0.02), (ONEDNN + " [25 flop/B]", 0.02)]
    target = [(ONEDNN + " [0.45 flop/B]", 0.02), (SLOW + " [6.4 flop/B]", 0.01),
              (SLOW + " [25 flop/B]", 0.1)]
    assert mp.family_of(ONEDNN + " [0.45 flop/B]") == "conv@0.45"
    diff = diff_profiles(_profile("target", target, "mobilenet_v3_large_infer"),
                         _profile("reference", reference, "mobilenet_v3_large_infer"))
    (prediction,) = mp.predict_all([diff], rows)
    assert prediction.ratios["conv@0.45"] == pytest.approx(0.9, rel=1e-3)
    assert prediction.ratios["conv_gemm@6.4"] == pytest.approx(0.74, rel=5e-3)
    assert prediction.ratios["conv_gemm@25"] == pytest.approx(0.04, rel=2e-2)  # 25.2 on the row
    # the reference's whole convolution share, split over the target's three paths in
    # proportion to the reference-equivalent work T x r
    work = {"conv@0.45": 0.02 * 0.9, "conv_gemm@6.4": 0.01 * prediction.ratios["conv_gemm@6.4"],
            "conv_gemm@25": 0.1 * prediction.ratios["conv_gemm@25"]}
    assert prediction.weights == pytest.approx({k: w / sum(work.values())
                                                for k, w in work.items()}, rel=1e-3)
    # without the kernels the same rows price the im2col calls on the GEMM curve (3 %)
    # and the oneDNN ones as the conv family (all conv rows)
    plain = [dataclasses.replace(c, target=dataclasses.replace(c.target, kernels=()))
             for c in rows]
    (prediction,) = mp.predict_all([diff], plain)
    assert prediction.ratios["conv_gemm@6.4"] == pytest.approx(0.03)
    every = (0.74 * 0.04 * 0.5 * 0.5 * 0.9) ** (1 / 5)
    assert prediction.ratios["conv@0.45"] == pytest.approx(every)


def test_a_training_row_stands_for_the_backward_path_it_ran():
    # conv_train on Debian's 1.13: the 1x1 at batch 2 ran forward and backward on
    # im2col + BLAS, the depthwise one on oneDNN; the backward kernel decides
    one_by_one = {"batch": 2, "cin": 112, "cout": 672, "hw": 14, "k": 1}
    depthwise = {"batch": 2, "cin": 72, "cout": 72, "hw": 56, "k": 3, "depthwise": True}
    rows = comparisons(("conv_train", one_by_one, 0.05), ("conv_train", depthwise, 0.8),
                       ("matmul_fp32", {"n": 512}, 0.03))
    rows[0] = _ran_on(rows[0], SLOW, "aten::_slow_conv2d_backward")
    rows[1] = _ran_on(rows[1], "aten::convolution_backward", ONEDNN)
    assert [mp.row_path(c) for c in rows[:2]] == ["conv_gemm_backward", "conv_backward"]
    assert mp.conv_curve(rows, "conv_backward") == [(pytest.approx(0.45, abs=5e-3), 0.8)]
    assert mp.conv_curve(rows, "conv_gemm_backward") == [(pytest.approx(32.2, abs=0.1),
                                                          pytest.approx(0.05))]
    assert mp.conv_curve(rows, "conv") == [] == mp.conv_curve(rows, "conv_gemm")
    # the oneDNN backward family keeps only the oneDNN row
    assert mp.family_ratios(rows)["conv_backward"] == (0.8, ("conv_train",))
    backward = "aten::convolution_backward [0.45 flop/B]"
    assert mp.family_of(backward) == "conv_backward@0.45"
    reference = [(backward, 0.02), ("aten::convolution_backward [32 flop/B]", 0.02)]
    target = [(backward, 0.025), ("aten::_slow_conv2d_backward [32 flop/B]", 0.4)]
    diff = diff_profiles(_profile("target", target, "mobilenet_v3_large_train"),
                         _profile("reference", reference, "mobilenet_v3_large_train"))
    rows.append(comparisons(("mobilenet_v3_large_train", {}, 0.1))[0])
    (prediction,) = mp.predict_all([diff], rows)
    assert prediction.ratios["conv_backward@0.45"] == pytest.approx(0.8)
    assert prediction.ratios["conv_gemm_backward@32"] == pytest.approx(0.05)


def test_an_inconclusive_model_row_says_so_in_the_models_table():
    # issue 16: "inconclusive" in every output; the Models table had left the cell blank
    from eb_torchperf.present.models_view import row_cells
    wide = dataclasses.replace(comparisons(("regnet_y_400mf_infer", {}, 0.8))[0],
                               relative_ops=None, inconclusive=True, ci_low=0.7, ci_high=1.2)
    (row,) = model_rows([wide])
    cells = row_cells(row)
    assert cells["infer"] == "inconclusive"
    assert cells["infer_interval"].startswith("70.0 % – 120.0 %")
    assert cells["train"] == "" and cells["train_interval"] == ""


def _inconclusive(c):
    """`c` as compare() gives an inconclusive row: no relative_ops, its estimate kept."""
    return dataclasses.replace(c, relative_ops=None, inconclusive=True,
                               estimate=c.relative_ops, ci_low=0.5, ci_high=1.6)


def test_an_inconclusive_micro_row_prices_its_family_at_its_estimate():
    # issue 17: Debian's depthwise 5x5 row at batch 2 was inconclusive, so mobilenet_v3's
    # 5x5 calls were priced off the 3x3 row alone
    three = {"batch": 2, "cin": 72, "cout": 72, "hw": 56, "k": 3, "depthwise": True}
    five = {"batch": 2, "cin": 120, "cout": 120, "hw": 28, "k": 5, "depthwise": True}
    rows = comparisons(("conv_depthwise", three, 0.8), ("conv_depthwise", five, 1.1),
                       ("batchnorm", {"mode": "eval"}, 0.5))
    rows = [_ran_on(rows[0], ONEDNN), _inconclusive(_ran_on(rows[1], ONEDNN)),
            _inconclusive(rows[2])]
    assert mp.row_ratio(rows[1]) == pytest.approx(1.1) and rows[1].relative_ops is None
    # both one group's GEMM of 0.45 and 0.48 flop/B: one point of the oneDNN curve
    assert mp.conv_curve(rows, "conv") == [(pytest.approx(0.45, abs=5e-3),
                                            pytest.approx(math.sqrt(0.8 * 1.1)))]
    ratios = mp.family_ratios(rows)
    assert ratios["conv"][0] == pytest.approx(math.sqrt(0.8 * 1.1))
    assert ratios["batch_norm"] == (pytest.approx(0.5), ("batchnorm",))
    # a row without any estimate (target alone) still gives nothing
    lone = dataclasses.replace(rows[2], estimate=None)
    assert mp.row_ratio(lone) is None and "batch_norm" not in mp.family_ratios([lone])
    # an inconclusive MODEL row has no measured value to judge the prediction by
    model = _inconclusive(comparisons(("mobilenet_v3_large_infer", {}, 0.9))[0])
    diff = diff_profiles(_profile("target", [("aten::native_batch_norm", 0.04)],
                                  "mobilenet_v3_large_infer"),
                         _profile("reference", [("aten::native_batch_norm", 0.02)],
                                  "mobilenet_v3_large_infer"))
    (prediction,) = mp.predict_all([diff], rows + [model])
    assert prediction.predicted == pytest.approx(0.5)
    assert prediction.measured is None and prediction.factor is None


def test_the_prediction_carries_the_profiles_own_relative_ops():
    # issue 17: the wheel's DLRM inference profiled at 5.2 % of the reference where
    # the audit measured 3.4 %: the prediction can be no better than its profile
    target = [("aten::addmm", 0.067), ("aten::_embedding_bag", 0.0021)]
    reference = [("aten::addmm", 0.0017), ("aten::_embedding_bag", 0.0011)]
    diff = diff_profiles(_profile("target", target, "dlrm_infer"),
                         _profile("reference", reference, "dlrm_infer"))
    rows = comparisons(("linear", {}, 0.03), ("embedding_bag", {}, 0.52),
                       ("dlrm_infer", {}, 0.034))
    (prediction,) = mp.predict_all([diff], rows)
    assert prediction.profiled == pytest.approx(0.0028 / 0.0691)
    assert prediction.profile_factor == pytest.approx(0.0028 / 0.0691 / 0.034)
    assert not prediction.profile_off                   # 4.05 % against 3.4 %: 1.19x
    assert dataclasses.replace(prediction, measured=0.03).profile_off          # 1.35x
    assert dataclasses.replace(prediction, measured=None).profile_factor is None
    assert not dataclasses.replace(prediction, measured=None).profile_off
