"""Issue 27 item 19: the raw-sample table's quartiles are computed for all groups at
once (a pandas quantile per group took minutes on a 205k-row file); same values."""

import pathlib

import numpy

from eb_torchperf.present.report.tables import format_time, raw_rows, select_time_unit
from eb_torchperf.records.measurements import load_results

DATA = pathlib.Path(__file__).parent.parent / "data"


def test_every_group_has_its_own_interquartile_range():
    result = load_results(DATA / "results-debian-vs-wheel-v1.json")
    rows = raw_rows(result)
    assert len(rows) == len(result.results)  # one per benchmark, params, side and pair
    for row, bench in zip(rows, result.results):
        times = [t for block in bench.blocks_s for t in block]
        q1, median, q3 = numpy.percentile(times, [25, 50, 75])
        scale, unit = select_time_unit(median)
        assert row["iqr"] == format_time(q3 - q1, scale, unit)
        assert row["median"] == format_time(median, scale, unit)
