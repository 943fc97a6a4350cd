"""BenchResult.extra_s: validation, JSON round trip, documents written without it."""

import pytest

from eb_torchperf.records.measurements import BenchResult


def _result(**changes):
    fields = dict(bench="linear_cuda_fwd", params={"tokens": 8192}, side="target", pair=0,
                  number_per_run=22, blocks_s=((1.07e-4, 1.08e-4), (1.06e-4,)),
                  work=6.9e10, work_unit="flop",
                  extra_s={"cpu_s": ((2.5e-5, 2.6e-5), (2.4e-5,)),
                           "gpu_s": ((1.0e-4, 1.01e-4), (9.9e-5,))})
    fields.update(changes)
    return BenchResult(**fields)


def test_extra_round_trips_through_json():
    result = _result()
    again = BenchResult.from_json(result.to_json())
    assert again == result
    assert again.extra_times_s("cpu_s") == (2.5e-5, 2.6e-5, 2.4e-5)
    assert again.extra_times_s("absent") == ()


def test_document_without_extra_loads_empty():
    data = _result().to_json()
    del data["extra_s"]
    assert BenchResult.from_json(data).extra_s == {}


def test_extra_needs_one_block_per_block():
    with pytest.raises(ValueError, match="extra metric 'cpu_s' needs one non-empty block"):
        _result(extra_s={"cpu_s": ((2.5e-5,),)})


@pytest.mark.parametrize("bad", [0.0, -1e-6, float("nan"), float("inf")])
def test_extra_times_must_be_positive_and_finite(bad):
    with pytest.raises(ValueError, match="extra metric 'gpu_s': times must be finite and > 0"):
        _result(extra_s={"gpu_s": ((bad, 1e-4), (1e-4,))})

