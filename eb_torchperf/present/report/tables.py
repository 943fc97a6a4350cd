"""Report tables built with pandas: relative OPS, raw measurements.

Each function returns a list of row dicts of display strings (DataFrame records), so
templates only lay them out.  Raw values stay in SI units until here; display units
are chosen per row (`select_time_unit`), as torch.utils.benchmark's `select_unit`.
"""

from typing import Dict, List, Optional, Sequence, Tuple

import pandas as pd

from eb_torchperf.records.measurements import AuditResult, params_key
from eb_torchperf.present.units import (comparison_note, format_numerics, format_params,
                                        format_rate, format_ratio)

#: (upper limit in seconds, scale, unit) for time display, smallest first.
TIME_UNITS = ((1e-6, 1e9, "ns"), (1e-3, 1e6, "µs"), (1.0, 1e3, "ms"), (float("inf"), 1.0, "s"))


def select_time_unit(seconds: float) -> Tuple[float, str]:
    """(scale, unit) that shows `seconds` with 1-3 digits before the point."""
    return next((scale, unit) for limit, scale, unit in TIME_UNITS if seconds < limit)


def format_time(seconds: float, scale: float, unit: str) -> str:
    """`seconds` in the chosen unit, 4 significant digits: "123.4 µs"."""
    return "%.4g %s" % (seconds * scale, unit)


def pct(value: Optional[float]) -> str:
    """0.281 -> "28.1 %"; "" for None or NaN (pandas' missing value)."""
    return "" if value is None or pd.isna(value) else format_ratio(value)


def comparison_frame(comparisons: Sequence,
                     fractions: Dict[tuple, tuple]) -> pd.DataFrame:
    """One row per benchmark key: numbers kept numeric (relative OPS as a fraction).

    Args:
        comparisons: from compare.compare (or the unpaired compare of two runs).
        fractions: peak.peak_fractions() output, key -> (fraction, Peak).
    """
    records = []
    for c in comparisons:
        fraction = fractions.get((c.bench, params_key(c.params)), (None, None))[0]
        records.append({
            "benchmark": c.bench, "params": format_params(c.params),
            "target": format_rate(c.target), "reference": format_rate(c.reference),
            "relative_ops": c.relative_ops, "ci_low": c.ci_low, "ci_high": c.ci_high,
            "peak_fraction": fraction, "rounds": c.rounds, "pairs": c.pairs,
            "significant": c.significant, "noisy": c.noisy, "inconclusive": c.inconclusive,
            "numerics": format_numerics(c), "note": comparison_note(c)})
    columns = ["benchmark", "params", "target", "reference", "relative_ops", "ci_low",
               "ci_high", "peak_fraction", "rounds", "pairs", "significant", "noisy",
               "inconclusive", "numerics", "note"]
    return pd.DataFrame.from_records(records, columns=columns)


def ops_rows(frame: pd.DataFrame) -> List[dict]:
    """Display rows of the relative-OPS table (all cells strings)."""
    shown = pd.DataFrame({
        "benchmark": frame["benchmark"], "params": frame["params"],
        "target": frame["target"], "reference": frame["reference"],
        "relative_ops": ["inconclusive" if flag else pct(value) for value, flag
                         in zip(frame["relative_ops"], frame["inconclusive"])],
        "interval": [("%s – %s" % (pct(lo), pct(hi))) if not pd.isna(lo) else ""
                     for lo, hi in zip(frame["ci_low"], frame["ci_high"])],
        "peak": frame["peak_fraction"].map(pct),
        "numerics": frame["numerics"],
        "note": frame["note"],
    })
    return shown.to_dict("records")


def raw_frame(result: AuditResult) -> pd.DataFrame:
    """Long table of every sample: bench, params, side, pair, block, time_s."""
    records = [{"benchmark": r.bench, "params": format_params(r.params), "side": r.side,
                "pair": r.pair, "number": r.number_per_run, "block": block, "time_s": t}
               for r in result.results for block, times in enumerate(r.blocks_s) for t in times]
    columns = ["benchmark", "params", "side", "pair", "number", "block", "time_s"]
    return pd.DataFrame.from_records(records, columns=columns)


def raw_rows(result: AuditResult) -> List[dict]:
    """Per benchmark, side and worker pair: samples, median, IQR, min, max (display)."""
    frame = raw_frame(result)
    if frame.empty:
        return []
    keys = ["benchmark", "params", "side", "pair", "number"]
    grouped = frame.groupby(keys, sort=False)["time_s"]
    # quartiles of every group at once (a lambda per group took minutes on 205k rows)
    summary = grouped.agg(samples="count", median="median", minimum="min",
                          maximum="max").reset_index()
    summary["q1"] = grouped.quantile(0.25).to_numpy()
    summary["q3"] = grouped.quantile(0.75).to_numpy()
    summary["blocks"] = frame.groupby(keys, sort=False)["block"].nunique().to_numpy()
    rows = []
    for record in summary.to_dict("records"):
        scale, unit = select_time_unit(record["median"])
        rows.append({
            "benchmark": record["benchmark"], "params": record["params"],
            "side": record["side"], "pair": str(record["pair"]),
            "number": str(record["number"]),
            "samples": "%d in %d blocks" % (record["samples"], record["blocks"]),
            "median": format_time(record["median"], scale, unit),
            "iqr": format_time(record["q3"] - record["q1"], scale, unit),
            "range": "%s – %s" % (format_time(record["minimum"], scale, unit),
                                  format_time(record["maximum"], scale, unit))})
    return rows
