"""Which audits may load one torch on both sides (issue 13 and the --target-env A/B)."""

import sys

from eb_torchperf.workflows.request import AuditRequest, validate


def _plan(**fields):
    return validate(AuditRequest(target=sys.executable, reference=sys.executable,
                                 only=("dispatch",), **fields))


def test_one_torch_on_both_sides_is_refused_by_default():
    assert _plan().options.allow_same_torch is False


def test_an_explicit_a_a_run_is_allowed():
    assert _plan(allow_same_torch=True).options.allow_same_torch is True


def test_a_target_env_comparison_of_one_build_is_allowed():
    plan = _plan(target_env=("CUDA_LAUNCH_BLOCKING=1",))
    assert plan.options.allow_same_torch is True
    assert plan.target_env == {"CUDA_LAUNCH_BLOCKING": "1"}
