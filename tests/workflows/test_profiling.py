"""explain_stage.profiling: a model's profile that is off the audit's figure is redone (issue 17)."""

import pytest

from eb_torchperf.analysis.profile_diff import PROFILE_AGREEMENT
from eb_torchperf.errors import ProbeError
from eb_torchperf.explain_stage.profiling import ProfileOptions, _profile_one


class FakeWorker:
    """Answers `profile` requests with one step of `addmm_s` seconds per request, in
    turn (the last one repeats); records the requests."""

    def __init__(self, *addmm_s, ok=True):
        self.addmm_s, self.ok, self.requests = list(addmm_s), ok, []

    def request(self, kind, timeout_s, **info):
        self.requests.append((kind, info["workload"]))
        seconds = self.addmm_s[min(len(self.requests), len(self.addmm_s)) - 1]
        if not self.ok:
            return {"ok": False, "exc_type": "KeyError", "message": "'nope'"}
        return {"ok": True, "workload": info["workload"], "iterations": 1, "wall_s": seconds,
                "threads": 2, "torch_version": "2.13.0",
                "ops": [{"name": "aten::addmm", "self_cpu_s": seconds,
                         "cpu_total_s": seconds, "calls": 5}]}


def _run(target, reference, measured, rounds=3):
    events = []
    diff = _profile_one({"target": target, "reference": reference}, "dlrm_infer",
                        ProfileOptions(rounds=rounds),
                        lambda event, **info: events.append((event, info)), measured)
    return diff, events


def test_a_profile_that_agrees_with_the_audit_is_kept():
    diff, events = _run(FakeWorker(0.07), FakeWorker(0.0024), measured=0.034)
    assert len(diff.reference.ops) == 1 and diff.reference.iterations == 3
    assert diff.relative_ops == pytest.approx(0.0024 / 0.07)
    assert [e for e, _ in events] == ["profile"] * 6
    # alternating: target first in rounds 0 and 2, the reference first in round 1
    assert [(i["round"], i["side"]) for _, i in events][:4] == [
        (0, "target"), (0, "reference"), (1, "reference"), (1, "target")]


def test_a_profile_off_the_audit_is_profiled_again_and_pooled_by_the_median():
    # the reference ran twice as slow in the first three requests (the shared VM's DLRM),
    # then as in the audit
    reference = FakeWorker(0.0048, 0.0048, 0.0048, 0.0024, 0.0024, 0.0024)
    diff, events = _run(FakeWorker(0.07), reference, measured=0.034)
    again = [info for event, info in events if event == "profile_again"]
    assert len(again) == 1
    assert again[0]["profiled"] == pytest.approx(0.0048 / 0.07)
    assert again[0]["factor"] == pytest.approx(0.0048 / 0.07 / 0.034)
    assert again[0]["factor"] > PROFILE_AGREEMENT
    assert len(reference.requests) == 6 and diff.reference.iterations == 6
    # the median of three slow and three steady requests: their mean
    assert diff.relative_ops == pytest.approx(0.0036 / 0.07)
    # rounds 3-5 continue the alternation
    assert [i["round"] for e, i in events if e == "profile"][-6:] == [3, 3, 4, 4, 5, 5]


def test_it_is_profiled_again_once_at_most_and_not_without_a_measurement():
    reference = FakeWorker(0.0048)
    diff, events = _run(FakeWorker(0.07), reference, measured=0.034)
    assert [e for e, _ in events].count("profile_again") == 1
    assert len(reference.requests) == 6 and diff.disagreement(0.034) > PROFILE_AGREEMENT
    reference = FakeWorker(0.0048)
    diff, events = _run(FakeWorker(0.07), reference, measured=None)
    assert len(reference.requests) == 3 and "profile_again" not in [e for e, _ in events]


def test_a_failed_request_names_the_side_and_the_workload():
    with pytest.raises(ProbeError, match="reference: profile dlrm_infer failed: KeyError"):
        _run(FakeWorker(0.07), FakeWorker(0.01, ok=False), measured=0.1)
