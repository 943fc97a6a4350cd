"""Display cells of the Models table (analysis/model_rows), for every report format."""

from typing import Optional

from eb_torchperf.present.units import format_ratio, format_relative


def interval_text(c: Optional[object]) -> str:
    """"12.3 % – 14.0 %", or why there is none ("1 round: no interval"); an
    inconclusive row shows the interval that made it so."""
    if c is None or (c.relative_ops is None and not c.inconclusive):
        return ""
    if c.ci_low is None:
        return "%d round%s: no interval" % (c.rounds, "" if c.rounds == 1 else "s")
    if len(c.pair_ratios) == 1:
        how = " (1 pair)" if c.rounds > 1 else " (1 pair, 1 round)"
    else:
        how = " (1 round per pair)" if c.rounds <= len(c.pair_ratios) else ""
    return "%s – %s%s" % (format_ratio(c.ci_low), format_ratio(c.ci_high), how)


def row_cells(row) -> dict:
    """Display strings of one model row: model, device, inference/training and intervals."""
    return {"model": row.model, "device": row.device,
            "infer": format_relative(row.infer) if row.infer else "",
            "infer_interval": interval_text(row.infer),
            "train": format_relative(row.train) if row.train else "",
            "train_interval": interval_text(row.train)}
