"""SVG chart geometry: axis, ticks, clipping, intervals, labels."""

from eb_torchperf.present.report.chart import LABEL_WIDTH, MAX_LABEL_CHARS, WIDTH, Bar, chart


def test_axis_spans_at_least_150_percent_with_quarter_ticks():
    view = chart([Bar("a", 0.3, 0.25, 0.35), Bar("b", 1.0)], "t", "reference")
    assert [t["text"] for t in view["ticks"]] == ["0 %", "25 %", "50 %", "75 %", "100 %",
                                                 "125 %", "150 %"]
    plot = WIDTH - LABEL_WIDTH - 70
    assert view["ref_x"] == "%.1f" % (LABEL_WIDTH + plot / 1.5)
    first = view["bars"][0]
    assert (first["css"], first["text"]) == ("slow", "30.0 %")
    assert first["width"] == "%.1f" % (plot * 0.3 / 1.5)
    assert first["interval"]["x1"] == "%.1f" % (LABEL_WIDTH + plot * 0.25 / 1.5)
    assert view["bars"][1]["css"] == "even" and view["bars"][1]["interval"] is None


def test_long_bars_are_clipped_at_400_percent_and_marked():
    view = chart([Bar("fast", 5.56), Bar("b", 2.0)], "t", "reference")
    assert view["ticks"][-1]["text"] == "400 %"
    assert view["bars"][0]["clipped"] and view["bars"][0]["css"] == "fast"
    assert not view["bars"][1]["clipped"]


def test_long_labels_are_shortened_and_kept_whole_for_the_tooltip():
    label = "embedding_bag rows=200000 dim=64 bags=4096 per_bag=20"
    bar = chart([Bar(label, 0.5)], "t", "reference")["bars"][0]
    assert len(bar["label"]) == MAX_LABEL_CHARS and bar["label"].endswith("…")
    assert bar["full_label"] == label


def test_no_bars_no_chart():
    assert chart([], "t", "reference") is None
