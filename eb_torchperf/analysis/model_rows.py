"""The Models table: whole-model rows of an audit, in the TorchBench #931 layout.

easybuilders/easybuild#931 quotes TorchBench as one row per model with the relative
OPS of inference and of training; the models suite (probe/suite_models) measures the
same two modes per model, as two benchmarks each.  This module folds those
comparisons into one row per model and device, and splits them from the micro-suite
rows, which the reports show after the models.  Pure: no I/O, no formatting beyond
the interval text.
"""

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from eb_torchperf.analysis.compare import Comparison, geomean_relative_ops
from eb_torchperf.probe.suite_models import MODEL_ROWS, MODES


@dataclasses.dataclass(frozen=True)
class ModelRow:
    """One model on one device.

    Attributes:
        model: e.g. "resnet50"; device: "cpu" or "cuda".
        infer, train: the comparisons of its two benchmarks (None where not measured).
    """

    model: str
    device: str
    infer: Optional[Comparison] = None
    train: Optional[Comparison] = None


def is_model(comparison: Comparison) -> bool:
    """True for a row of the models suite."""
    return comparison.bench in MODEL_ROWS


def split(comparisons: Sequence[Comparison]) -> Tuple[List[Comparison], List[Comparison]]:
    """(model comparisons, micro-suite comparisons), each in measurement order."""
    return ([c for c in comparisons if is_model(c)],
            [c for c in comparisons if not is_model(c)])


def model_rows(comparisons: Sequence[Comparison]) -> List[ModelRow]:
    """One ModelRow per (model, device) measured, in measurement order."""
    rows = {}
    for c in comparisons:
        if not is_model(c):
            continue
        model, mode, device = MODEL_ROWS[c.bench]
        row = rows.setdefault((model, device), ModelRow(model, device))
        rows[(model, device)] = dataclasses.replace(row, **{mode: c})
    return list(rows.values())


def mode_geomeans(comparisons: Sequence[Comparison]) -> Dict[str, Optional[float]]:
    """{"infer": geometric mean of the inference rows, "train": of the training steps};
    None for a mode with no relative OPS."""
    models = split(comparisons)[0]
    return {mode: geomean_relative_ops([c for c in models if MODEL_ROWS[c.bench][1] == mode])
            for mode in MODES}


def models_geomean(comparisons: Sequence[Comparison]) -> Optional[float]:
    """Geometric mean of the model rows' relative OPS (inference and training), or None."""
    return geomean_relative_ops(split(comparisons)[0])
