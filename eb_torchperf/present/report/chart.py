"""Geometry of the inline SVG bar chart (relative OPS with intervals, or % of peak).

All coordinates are computed here and handed to the template as strings, so the
template does no arithmetic.  Horizontal bars, one per benchmark; a dashed line at
100 % (the reference, or the peak); whiskers for the 95 % interval.
"""

from typing import List, NamedTuple, Optional, Sequence

#: Pixel layout.
WIDTH = 720
LABEL_WIDTH = 250
RIGHT_MARGIN = 70
ROW_HEIGHT = 24
BAR_HEIGHT = 14
TOP = 28
BOTTOM = 30
#: The axis ends at the largest value x 1.1, at least 150 %, at most 400 % (longer
#: bars are clipped and marked).
MIN_AXIS, MAX_AXIS = 1.5, 4.0
#: Labels longer than this are shortened with "…" (the full label is the bar's tooltip):
#: about what fits LABEL_WIDTH at the 11 px font of the template.
MAX_LABEL_CHARS = 40
#: Bars below / above these fractions of 100 % are coloured slow / fast (the 10 %
#: warning bound of the BLAS and kernel rules).
SLOW_BELOW, FAST_ABOVE = 0.9, 1.1


class Bar(NamedTuple):
    """One benchmark: label, value (fraction of 100 %), optional interval."""

    label: str
    value: float
    low: Optional[float] = None
    high: Optional[float] = None


def _axis_max(bars: Sequence[Bar]) -> float:
    largest = max([b.high or b.value for b in bars] + [b.value for b in bars])
    return min(MAX_AXIS, max(MIN_AXIS, largest * 1.1))


def _tick_step(axis_max: float) -> float:
    return 0.25 if axis_max <= 1.5 else 0.5 if axis_max <= 3.0 else 1.0


def _x(value: float, axis_max: float) -> float:
    plot = WIDTH - LABEL_WIDTH - RIGHT_MARGIN
    return LABEL_WIDTH + plot * min(max(value, 0.0), axis_max) / axis_max


def _fmt(number: float) -> str:
    return "%.1f" % number


def _bar_view(index: int, bar: Bar, axis_max: float) -> dict:
    top = TOP + index * ROW_HEIGHT
    middle = top + BAR_HEIGHT / 2
    end = _x(bar.value, axis_max)
    short = bar.label
    if len(short) > MAX_LABEL_CHARS:
        short = short[:MAX_LABEL_CHARS - 1] + "…"
    view = {"label": short, "full_label": bar.label, "text": "%.1f %%" % (100 * bar.value),
            "x": _fmt(LABEL_WIDTH), "y": _fmt(top), "width": _fmt(end - LABEL_WIDTH),
            "height": _fmt(BAR_HEIGHT), "label_x": _fmt(LABEL_WIDTH - 6),
            "text_y": _fmt(middle + 4), "value_x": _fmt(end + 6),
            "clipped": bar.value > axis_max,
            "css": ("slow" if bar.value < SLOW_BELOW else
                    "fast" if bar.value > FAST_ABOVE else "even"),
            "interval": None}
    if bar.low is not None and bar.high is not None:
        x1, x2 = _x(bar.low, axis_max), _x(bar.high, axis_max)
        view["interval"] = {"x1": _fmt(x1), "x2": _fmt(x2), "y": _fmt(middle),
                            "y1": _fmt(middle - 4), "y2": _fmt(middle + 4),
                            "value_x": _fmt(max(end, x2) + 6)}
        view["value_x"] = view["interval"]["value_x"]
    return view


def chart(bars: Sequence[Bar], title: str, reference_label: str) -> Optional[dict]:
    """The SVG view model, or None without bars.

    Returns:
        {"width", "height", "title", "bars": [...], "ticks": [{"x", "text"}],
         "ref_x", "reference_label", "axis_y", "plot_top"} — all numbers as strings.
    """
    if not bars:
        return None
    axis_max = _axis_max(bars)
    step = _tick_step(axis_max)
    height = TOP + len(bars) * ROW_HEIGHT + BOTTOM
    axis_y = TOP + len(bars) * ROW_HEIGHT
    ticks: List[dict] = []
    value = 0.0
    while value <= axis_max + 1e-9:
        ticks.append({"x": _fmt(_x(value, axis_max)), "text": "%d %%" % round(100 * value)})
        value += step
    return {"width": str(WIDTH), "height": str(height), "title": title,
            "bars": [_bar_view(i, b, axis_max) for i, b in enumerate(bars)],
            "ticks": ticks, "ref_x": _fmt(_x(1.0, axis_max)), "reference_label": reference_label,
            "axis_y": _fmt(axis_y), "tick_y": _fmt(axis_y + 16), "plot_top": _fmt(TOP - 8),
            "title_y": "16"}
