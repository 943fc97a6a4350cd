"""Inline SVG line charts for the HTML history: no script, no network at view time.

One chart per node type: x = the audits in time order, y = geometric mean of relative
OPS to the reference (%), one coloured series per build, a dashed line at 100 % (the
reference).  Each point has a <title> (shown on hover) with build, date and value.
"""

import html
from typing import Dict, List, Sequence, Tuple

from eb_torchperf.present.units import format_ratio

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 20, 60
#: Series colours (Okabe–Ito, readable by colour-blind readers:
#: https://jfly.uni-koeln.de/color/).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

Point = Tuple[int, float, str]  # (x index, relative OPS ratio, hover text)


def _scale(values: Sequence[float]) -> Tuple[float, float]:
    """y range in ratio units, always including the reference (1.0), padded."""
    low, high = min(list(values) + [1.0]), max(list(values) + [1.0])
    pad = (high - low) * 0.1 or 0.1
    return max(0.0, low - pad), high + pad


def _xy(index: int, value: float, count: int, y_range: Tuple[float, float]) -> Tuple[float, float]:
    span_x = WIDTH - LEFT - RIGHT
    x = LEFT + (span_x * (index + 0.5) / max(count, 1))
    low, high = y_range
    y = TOP + (HEIGHT - TOP - BOTTOM) * (1 - (value - low) / (high - low))
    return round(x, 1), round(y, 1)


def _axes(y_range: Tuple[float, float], labels: Sequence[str]) -> List[str]:
    parts = ['<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/>'
             % (LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM),
             '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444"/>'
             % (LEFT, TOP, LEFT, HEIGHT - BOTTOM)]
    low, high = y_range
    for step in range(5):
        value = low + (high - low) * step / 4
        _, y = _xy(0, value, 1, y_range)
        parts.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s</text>'
                     % (LEFT - 6, y + 4, html.escape(format_ratio(value))))
    _, ref_y = _xy(0, 1.0, 1, y_range)
    parts.append('<line class="reference" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888" '
                 'stroke-dasharray="4 3"/>' % (LEFT, ref_y, WIDTH - RIGHT, ref_y))
    for index, label in enumerate(labels):
        x, _ = _xy(index, low, len(labels), y_range)
        parts.append('<text x="%.1f" y="%d" font-size="10" text-anchor="end" '
                     'transform="rotate(-30 %.1f %d)">%s</text>'
                     % (x, HEIGHT - BOTTOM + 14, x, HEIGHT - BOTTOM + 14, html.escape(label)))
    return parts


def line_chart(series: Dict[str, List[Point]], labels: Sequence[str], title: str) -> str:
    """An <svg> element: one polyline with points per series (name -> points).

    Args:
        series: build name -> [(x index into labels, ratio, hover text)], ratios > 0.
        labels: x-axis labels (audit dates), one per x index.
        title: the chart's accessible title.
    """
    values = [v for points in series.values() for _, v, _ in points]
    y_range = _scale(values or [1.0])
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="%d" '
             'height="%d" viewBox="0 0 %d %d"><title>%s</title>'
             % (WIDTH, HEIGHT + 20 * len(series), WIDTH, HEIGHT + 20 * len(series),
                html.escape(title))] + _axes(y_range, labels)
    for number, (name, points) in enumerate(sorted(series.items())):
        colour = COLOURS[number % len(COLOURS)]
        xy = [_xy(i, v, len(labels), y_range) for i, v, _ in points]
        parts.append('<polyline class="series" fill="none" stroke="%s" stroke-width="2" '
                     'points="%s"/>' % (colour, " ".join("%s,%s" % p for p in xy)))
        for (x, y), (_, _, text) in zip(xy, points):
            parts.append('<circle class="point" cx="%s" cy="%s" r="4" fill="%s"><title>%s'
                         '</title></circle>' % (x, y, colour, html.escape(text)))
        legend_y = HEIGHT + 14 + 20 * number
        parts.append('<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" '
                     'font-size="12">%s</text>' % (LEFT, legend_y - 10, colour, LEFT + 18,
                                                   legend_y, html.escape(name)))
    parts.append("</svg>")
    return "\n".join(parts)
