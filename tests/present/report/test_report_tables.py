"""pandas-built report tables from the golden results."""

import statistics

import pytest

from eb_torchperf.present.report.tables import raw_frame, raw_rows, select_time_unit

from auditcases import golden_result


@pytest.mark.parametrize("seconds, unit", [(5e-10, "ns"), (1e-6, "µs"), (9.99e-4, "µs"),
                                           (1e-3, "ms"), (0.5, "ms"), (1.0, "s")])
def test_time_unit_boundaries(seconds, unit):
    assert select_time_unit(seconds)[1] == unit


def test_raw_rows_summarise_every_result_of_the_golden_run():
    result = golden_result()
    assert len(raw_frame(result)) == sum(len(r.times_s) for r in result.results)
    rows = raw_rows(result)
    assert len(rows) == len(result.results)
    first, row = result.results[0], rows[0]
    scale, unit = select_time_unit(statistics.median(first.times_s))
    assert row["median"] == "%.4g %s" % (statistics.median(first.times_s) * scale, unit)
    assert row["samples"] == "%d in %d blocks" % (len(first.times_s), len(first.blocks_s))
    assert (row["benchmark"], row["side"], row["number"]) == (
        first.bench, first.side, str(first.number_per_run))
