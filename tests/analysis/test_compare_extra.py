"""rate_of pools extra metrics into their median, over all pairs."""

from eb_torchperf.analysis.compare import rate_of
from eb_torchperf.records.measurements import BenchResult


def _result(pair, cpu):
    return BenchResult("launch_cuda", {"sync": False}, "target", pair, 250, ((1e-5, 1e-5),),
                       1.0, "op", {"cpu_s": ((cpu, cpu + 2e-6),), "gpu_s": ((1.8e-6, 1.8e-6),)})


def test_extra_medians_pool_all_pairs():
    rate = rate_of([_result(0, 9e-6), _result(1, 1.2e-5)])
    # samples 9, 11, 12, 14 us -> median 11.5 us
    assert abs(rate.extra_s["cpu_s"] - 11.5e-6) < 1e-12
    assert rate.extra_s["gpu_s"] == 1.8e-6
    assert abs(rate.value - 10.0) < 1e-9   # µs/op


def test_no_extra_gives_empty_dict():
    plain = BenchResult("dispatch", {}, "target", 0, 10, ((1e-6,),), 1.0, "op")
    assert rate_of([plain]).extra_s == {}
