"""analysis.numerics.assess: every state, from constructed per-side numerics."""

import dataclasses

import pytest

from eb_torchperf.analysis import numerics
from eb_torchperf.analysis.compare import compare_pair

from auditcases import bench_pair

BOUND = 1.13e-05  # fp32, K = 512 (probe.numerics.bound)


def side(norm_rel, flushed=0, bound=BOUND):
    return {"max_rel": 6 * norm_rel, "norm_rel": norm_rel, "flushed": flushed,
            "dtype": "float32", "bound": bound, "depth": 512}


def test_equal_small_errors_agree():
    found = numerics.assess(side(2.4e-7), side(4.1e-7))
    assert found["state"] == "agree" and found["mechanism"] is None
    assert found["bound"] == BOUND and found["reference"]["norm_rel"] == 4.1e-7


def test_above_the_bound_is_reduced_precision_even_without_reference():
    assert numerics.assess(side(5e-4), side(2.4e-7))["state"] == "reduced-precision"
    alone = numerics.assess(side(5e-4), None)
    assert (alone["state"], alone["mechanism"], alone["reference"]) == (
        "reduced-precision", "precision", None)


def test_far_above_the_reference_within_a_loose_bound():
    # 20x the reference's error and above a tenth of the bound: a precision loss
    assert numerics.assess(side(4.8e-6), side(2.4e-7))["state"] == "reduced-precision"
    # 20x a tiny reference error but far inside the bound: summation order, not a mode
    assert numerics.assess(side(4.8e-8), side(2.4e-9))["state"] == "agree"
    # an exact reference (error 0) and a target a little off: agree
    assert numerics.assess(side(1e-8), side(0.0))["state"] == "agree"


def test_flushed_denormals_are_reduced_precision_not_wrong():
    found = numerics.assess(side(1.0, flushed=16384), side(2.3e-7))
    assert (found["state"], found["mechanism"]) == ("reduced-precision", "flush")
    # both sides flush: the target computes as the reference does, but the error is 1
    assert numerics.assess(side(1.0, flushed=5), side(1.0, flushed=5))["state"] == "wrong"


@pytest.mark.parametrize("error,state", [(numerics.WRONG_REL, "wrong"), (0.35, "wrong"),
                                         (1e9, "wrong"),  # probe.numerics.ERROR_CAP: NaN
                                         (0.2, "reduced-precision")])
def test_order_one_errors_are_wrong(error, state):
    assert numerics.assess(side(error), side(2.4e-7))["state"] == state


def test_missing_or_failed_numerics():
    assert numerics.assess({}, side(1e-7)) is None
    assert numerics.assess({"error": "RuntimeError: x"}, side(1e-7)) is None
    found = numerics.assess(side(1e-7), {"error": "RuntimeError: x"})
    assert found["state"] == "agree" and found["reference"] is None


def model(loss, grad=None, dtype="float32"):
    return dict({"dtype": dtype, "loss": loss}, **({} if grad is None else {"grad_norm": grad}))


def test_models_compare_the_two_sides():
    # resnet50 train, wheel 2.13 vs Debian 1.13 on the dev VM: gradient norms 1.9e-4 apart
    agree = numerics.assess(model(0.3565, 19.98287), model(0.3565, 19.97909))
    assert agree["state"] == "agree" and agree["difference"] == pytest.approx(1.89e-4, rel=1e-2)
    reduced = numerics.assess(model(0.3565, 20.4), model(0.3565, 19.98))
    assert reduced["state"] == "reduced-precision"
    assert numerics.assess(model(0.9, 19.98), model(0.3565, 19.98))["state"] == "wrong"
    assert numerics.assess(model(0.3565, 19.98), None) is None
    bf16 = numerics.assess(model(1.0, dtype="bfloat16"), model(1.02, dtype="bfloat16"))
    assert bf16["state"] == "agree" and bf16["bound"] == numerics.MODEL_BOUND["bfloat16"]


def test_compare_pair_carries_the_first_pairs_numerics():
    target, reference = bench_pair("matmul_fp32", {"n": 512}, 1.4)
    target = dataclasses.replace(target, numerics=side(5e-4))
    reference = dataclasses.replace(reference, numerics=side(2.4e-7))
    later = dataclasses.replace(target, pair=1, numerics={})
    c = compare_pair([target, later], [reference])
    assert c.numerics["state"] == "reduced-precision"
    assert c.numerics["target"]["norm_rel"] == 5e-4
    assert compare_pair([later], [reference]).numerics is None
