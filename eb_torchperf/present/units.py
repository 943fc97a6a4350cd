"""The one place where numbers become display text: units, percentages, evidence.

Raw values stay in SI units (seconds, FLOP/s as GFLOP/s rates, ratios as fractions)
until here; every output (terminal, HTML, Markdown, the EasyBuild log line) formats
through these functions, so a figure reads the same everywhere.
"""

import math
from typing import List, Optional, Sequence, Tuple

from eb_torchperf.records.findings import QUANTITY_UNITS

#: Display units for seconds, largest first: (factor, suffix, smallest value shown with it).
_TIME_UNITS = ((1.0, "s", 1.0), (1e-3, "ms", 1e-3), (1e-6, "µs", 0.0))


def format_params(params: dict) -> str:
    """`{"n": 512, "threads": 1}` -> "n=512 threads=1"."""
    return " ".join("%s=%s" % (k, v) for k, v in params.items())


#: Display unit -> (the next unit up, factor): GPU rates read as "708 TFLOP/s", not
#: "7.08e+05 GFLOP/s".
LARGER_UNIT = {"GFLOP/s": ("TFLOP/s", 1e3), "GB/s": ("TB/s", 1e3)}


def display_unit(unit: str, largest: float) -> Tuple[str, float]:
    """(unit to show, divisor) for rates up to `largest` in `unit`: the next unit up
    (LARGER_UNIT) from 1000 on, else `unit` itself."""
    if unit in LARGER_UNIT and abs(largest) >= 1e3:
        return LARGER_UNIT[unit]
    return unit, 1.0


def format_rate(rate) -> str:
    """"123 GFLOP/s", "708 TFLOP/s", "4.24 TB/s" (3 significant digits), "" when absent."""
    if rate is None:
        return ""
    unit, factor = display_unit(rate.unit, rate.value)
    return "%.3g %s" % (rate.value / factor, unit)


def format_ratio(value: Optional[float]) -> str:
    """Relative OPS as a percentage, "" when absent."""
    return "" if value is None else "%.1f %%" % (100 * value)


def format_percent(value: Optional[float], fine_below: float = 0.1) -> str:
    """A fraction as a whole percentage ("33 %"), one decimal below `fine_below`
    ("3.5 %"), "?" when absent."""
    if value is None:
        return "?"
    return "%.0f %%" % (100 * value) if value >= fine_below else "%.1f %%" % (100 * value)


def format_percent_interval(value: Optional[float], low: Optional[float],
                            high: Optional[float]) -> str:
    """"33 % [30-36 %]" (format_percent of each), the value alone without an interval."""
    if low is None or high is None:
        return format_percent(value)
    return "%s [%s-%s]" % (format_percent(value), format_percent(low)[:-2], format_percent(high))


def format_relative(c) -> str:
    """The relative-OPS cell of a compare.Comparison: the ratio, or "inconclusive"."""
    return "inconclusive" if c.inconclusive else format_ratio(c.relative_ops)


def comparison_note(c) -> str:
    """Note cell of a compare.Comparison: the flags that change how to read the row, and
    what it got ("significant · 4 pairs, 12 rounds"; adaptive rounds, issue 16), and the
    kernels where the two sides ran different ones (kernel_note)."""
    flags = [n for n, on in (("significant", c.significant), ("noisy", c.noisy)) if on]
    if c.pairs:
        flags.append("%d pair%s, %d rounds" % (c.pairs, "" if c.pairs == 1 else "s", c.rounds))
    kernels = kernel_note(c)
    if kernels:
        flags.append(kernels)
    return " · ".join(flags)


def kernel_note(c) -> str:
    """"target ran _slow_conv2d_forward, reference mkldnn_convolution" where the two
    sides' top kernels (compare.Rate.kernels) differ, else ""."""
    target = c.target.kernels if c.target is not None else ()
    reference = c.reference.kernels if c.reference is not None else ()
    if not target or not reference or target[0] == reference[0]:
        return ""
    short = lambda name: name.split("::", 1)[-1]  # noqa: E731
    return "target ran %s, reference %s" % (short(target[0]), short(reference[0]))


#: Numerics cell prefix per state (analysis.numerics): agreeing rows show the errors only.
NUMERICS_MARKS = {"agree": "", "reduced-precision": "REDUCED ", "wrong": "WRONG "}


def format_error(value: Optional[float]) -> str:
    """A relative error: 2.4e-07, 0.5 (2 significant digits), "" when absent."""
    return "" if value is None else "%.2g" % value


def format_numerics(c) -> str:
    """The numerics cell of a compare.Comparison: the target's error against float64
    "vs" the reference's (model rows: "Δ" the relative difference of loss and gradient
    norm between the sides), after a mark for a disagreeing row; "" without numerics.
    Examples: "2.4e-07 vs 4.1e-07", "WRONG 0.5 vs 2.4e-07", "REDUCED Δ 0.012"."""
    n = getattr(c, "numerics", None)
    if not n:
        return ""
    mark = NUMERICS_MARKS.get(n.get("state"), "")
    if "difference" in n:
        return "%sΔ %s" % (mark, format_error(n["difference"]))
    text = format_error((n.get("target") or {}).get("norm_rel"))
    theirs = (n.get("reference") or {}).get("norm_rel")
    return mark + text + ("" if theirs is None else " vs " + format_error(theirs))


def format_seconds(value: float) -> str:
    """3.9 -> "3.9 s", 0.045 -> "45 ms", 2e-5 -> "20 µs" (3 significant digits)."""
    for factor, suffix, smallest in _TIME_UNITS:
        if abs(value) >= smallest:
            return "%.3g %s" % (value / factor, suffix)
    return "0 s"


def format_share(share: Optional[float]) -> str:
    """Share of the gap as a percentage, "" when the target is not slower."""
    return "" if share is None else format_percent(share, 0)



def format_quantity(q: dict) -> str:
    """A quantity evidence value (records.findings.quantity) as text.

    Examples: ratio 0.281 with low/high -> "28.1 % [16.2–48.5 %]"; seconds 3.95 with
    reference 0.046 -> "3.95 s vs 46 ms"; 5.86 GFLOP/s -> "5.86 GFLOP/s".
    """
    unit = q.get("unit")
    text = _format_one(q.get("value"), unit)
    if q.get("low") is not None and q.get("high") is not None:
        low, high = _format_one(q["low"], unit), _format_one(q["high"], unit)
        if unit in ("ratio", "fraction"):
            low = low[:-2]
        text += " [%s–%s]" % (low, high)
    if "reference" in q:
        text += " vs " + _format_one(q.get("reference"), unit)
    if q.get("noisy"):
        text += " (noisy)"
    return text


def _format_one(value, unit: Optional[str]) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unknown"
    if unit in ("ratio", "fraction"):
        return format_ratio(value)
    if unit == "s":
        return format_seconds(value)
    if unit == "x":
        return "%.2fx" % value
    if unit in ("cores", "count"):
        return "%d" % value
    if unit == "rel_error":
        return format_error(value)
    shown, factor = display_unit(unit or "", value)
    return ("%.3g %s" % (value / factor, shown)).rstrip()


def evidence_text(value) -> str:
    """Any evidence value as text: quantities formatted, lists joined, None "unset".

    Evidence of stored results from before evidence became values (strings) is shown
    as it was stored.
    """
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict) and value.get("unit") in QUANTITY_UNITS and "value" in value:
        return format_quantity(value)
    if isinstance(value, dict):
        return ", ".join("%s: %s" % (k, evidence_text(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(evidence_text(v) for v in value)
    return str(value)


#: A difference's value that is not set on a side (diagnosis.differences.Difference).
UNSET = "unset"


def value_text(value) -> str:
    """A difference's value for display: None is "unset", dicts "k=v, ..."."""
    if value is None:
        return UNSET
    if isinstance(value, dict):
        return ", ".join("%s=%s" % (k, value_text(v)) for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%.4g" % value
    if isinstance(value, (list, tuple)):
        joiner = "; " if any(isinstance(v, dict) for v in value) else ", "
        return joiner.join(value_text(v) for v in value)
    return str(value)


def format_cpulist(cpus: Optional[Sequence[int]]) -> Optional[str]:
    """CPU numbers as a cpulist: [0, 1, 2, 5] -> "0-2,5" (None for None; the inverse of
    probe.facts_more.parse_cpulist)."""
    if cpus is None:
        return None
    parts, run = [], []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            parts.append(_run_text(run))
        run = [cpu]
    if run:
        parts.append(_run_text(run))
    return ",".join(parts)


def _run_text(run: List[int]) -> str:
    return str(run[0]) if len(run) == 1 else "%d-%d" % (run[0], run[-1])
