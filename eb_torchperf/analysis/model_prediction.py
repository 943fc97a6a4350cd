"""Predict each model's relative OPS from the micro-suite rows, weighted by its profile.

The micro-suite's geometric mean weighs every row alike; a model spends its time in a
few operator families (resnet50: convolutions and batch norm; BERT: GEMM).  So each
model's prediction weights the micro rows by the model's own profile (explain's
per-operator profile of the model workload, probe/profile.MODEL_WORKLOADS):

1. every profiled operator is put in one family (FAMILIES: GEMM, convolution forward
   and backward on oneDNN and on the im2col + BLAS path, batch norm, other vectorised
   kernels, embedding, fused attention, per-op overhead) by its canonical name
   (profile_diff.canonical_op).  The convolution path is read off the profile, not
   guessed: torch 1.13 sends a 1x1 convolution at batch < 16 to the im2col + BLAS
   path when it runs one thread ("THNN is faster when single-threaded",
   aten/src/ATen/native/ConvUtils.h use_mkldnn), so Debian's resnet50 spends 97 % of
   its inference gap in aten::_slow_conv2d_forward, i.e. in reference BLAS;
2. each family's weight is its share of the REFERENCE's self CPU time per step: how
   the fast build spends a step, i.e. the work mix, independent of the target's gaps;
3. each family's relative OPS is the geometric mean of the audit's micro rows for
   that family (FAMILY_ROWS; families without a measured row are left out and the
   weights renormalised, and the prediction says which);
4. the prediction is the time-additive composition (Amdahl): a family that takes
   w_k of the reference's step and runs at r_k takes w_k / r_k on the target, so the
   model runs at 1 / sum_k(w_k / r_k).  The weighted geometric mean
   exp(sum_k w_k log r_k) is given beside it (it overstates a model whose time the
   slowest family dominates on the target).

Pure: no I/O.  Inputs are compare.Comparison rows and profile_diff.ProfileDiff.
"""

import dataclasses
import math
import re
from typing import Dict, List, Optional, Sequence, Tuple

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.analysis.model_rows import is_model
from eb_torchperf.analysis.profile_diff import ProfileDiff, backend_of, canonical_op
from eb_torchperf.analysis.stats import geometric_mean

#: family -> (title, regular expression over canonical operator names); first match
#: wins, after that profile_diff.backend_of decides (FALLBACK).
FAMILIES = (
    ("conv_gemm_backward", "convolution backward, im2col + BLAS path",
     r"^aten::(_slow_conv2d_backward\w*|thnn_conv\w*backward\w*|slow_conv\w*backward\w*)$"),
    ("conv_backward", "convolution backward (oneDNN)",
     r"^aten::(convolution_backward\w*|\w*conv\w*backward\w*)$"),
    ("conv_gemm", "convolution forward, im2col + BLAS path",
     r"^aten::(_slow_conv2d_forward|thnn_conv2d\w*|slow_conv\w*)$"),
    ("conv", "convolution forward (oneDNN)", None),
    ("batch_norm", "batch norm", r"^aten::(\w*batch_norm\w*)$"),
    ("gemm", "GEMM (BLAS / oneDNN)", None),
    ("attention", "fused attention", None),
    ("embedding", "embedding_bag", None),
    ("vectorised", "other vectorised kernels", None),
    ("overhead", "per-op overhead (autograd, views, dispatch)", None),
)
#: profile_diff backend key -> family, for operators no FAMILIES pattern matched.
FALLBACK = {"blas": "gemm", "conv": "conv", "attention": "attention",
            "embedding": "embedding", "vectorised": "vectorised", "autograd": "overhead",
            "other": "overhead"}
#: family -> the micro rows (benchmark names) that stand for it.
FAMILY_ROWS = {
    # nn.Linear is addmm with the transposed weight: the linear rows
    "gemm": ("linear",),
    # the slow convolution is im2col + a plain sgemm of contiguous matrices (forward),
    # and sgemms with a transposed operand (backward)
    "conv_gemm": ("matmul_fp32",),
    "conv_gemm_backward": ("matmul_fp32", "linear"),
    "conv": ("conv3x3", "conv1x1", "conv_depthwise"),
    "conv_backward": ("conv_train",),
    "batch_norm": ("batchnorm",),
    "attention": ("bert_layer_infer",),
    "embedding": ("embedding_bag",),
    "vectorised": ("layernorm", "softmax", "gelu", "add_bandwidth"),
    "overhead": ("dispatch",),
}


def family_of(op: str) -> str:
    """The prediction family of profiler operator name `op`."""
    op = canonical_op(op)
    for key, _, pattern in FAMILIES:
        if pattern and re.match(pattern, op):
            return key
    return FALLBACK[backend_of(op).key]


def family_weights(diff: ProfileDiff) -> Dict[str, float]:
    """Family -> share of the reference's self CPU time per step (sums to 1).

    Operators with a negative self time (torch.profiler rounding) count as zero.

    Raises:
        ValueError: the reference profile has no positive time.
    """
    times: Dict[str, float] = {}
    for op in diff.ops:
        times[family_of(op.op)] = times.get(family_of(op.op), 0.0) + max(op.reference_s, 0.0)
    total = sum(times.values())
    if total <= 0:
        raise ValueError("%s: the reference profile has no time" % diff.workload)
    return {k: v / total for k, v in sorted(times.items(), key=lambda kv: -kv[1]) if v > 0}


def family_ratios(comparisons: Sequence[Comparison]) -> Dict[str, Tuple[float, Tuple[str, ...]]]:
    """Family -> (geometric mean relative OPS of its measured micro rows, row labels)."""
    by_bench: Dict[str, List[Comparison]] = {}
    for c in comparisons:
        if c.relative_ops is not None and not is_model(c):
            by_bench.setdefault(c.bench, []).append(c)
    ratios = {}
    for family, benches in FAMILY_ROWS.items():
        rows = [c for b in benches for c in by_bench.get(b, ())]
        if rows:
            ratios[family] = (geometric_mean([c.relative_ops for c in rows]),
                              tuple(dict.fromkeys(c.bench for c in rows)))
    return ratios


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The micro-suite's prediction of one model row.

    Attributes:
        bench: the model benchmark (= profile workload), e.g. "resnet50_train".
        predicted: time-additive prediction of relative OPS.
        predicted_geomean: the weighted geometric mean of the family ratios.
        weights: family -> reference time share used (renormalised over covered ones).
        ratios: family -> relative OPS of its micro rows.
        uncovered: share of the reference's step in families without a measured row.
        measured: the model's measured relative OPS (None where not measured).
    """

    bench: str
    predicted: float
    predicted_geomean: float
    weights: Dict[str, float]
    ratios: Dict[str, float]
    uncovered: float
    measured: Optional[float] = None

    @property
    def factor(self) -> Optional[float]:
        """max(predicted / measured, measured / predicted): 1.0 is exact."""
        if not self.measured:
            return None
        return max(self.predicted / self.measured, self.measured / self.predicted)


def predict(diff: ProfileDiff, comparisons: Sequence[Comparison]) -> Optional[Prediction]:
    """Predict the model of profile `diff` from the micro rows in `comparisons`.

    Returns:
        the Prediction, or None when no family of the model has a measured micro row.
    """
    weights = family_weights(diff)
    ratios = family_ratios(comparisons)
    covered = {k: w for k, w in weights.items() if k in ratios}
    if not covered:
        return None
    total = sum(covered.values())
    covered = {k: w / total for k, w in covered.items()}
    additive = 1.0 / sum(w / ratios[k][0] for k, w in covered.items())
    geo = math.exp(sum(w * math.log(ratios[k][0]) for k, w in covered.items()))
    measured = next((c.relative_ops for c in comparisons if c.bench == diff.workload), None)
    return Prediction(diff.workload, additive, geo, covered,
                      {k: ratios[k][0] for k in covered}, 1.0 - total, measured)


def predict_all(diffs: Sequence[ProfileDiff], comparisons: Sequence[Comparison]
                ) -> List[Prediction]:
    """One Prediction per model workload among `diffs` that can be predicted."""
    names = {c.bench for c in comparisons if is_model(c)}
    predictions = [predict(d, comparisons) for d in diffs if d.workload in names]
    return [p for p in predictions if p is not None]


def geomean_pair(predictions: Sequence[Prediction]) -> Tuple[Optional[float], Optional[float]]:
    """(geometric mean of the measured models, of their predictions), over the
    predictions that have a measurement."""
    both = [p for p in predictions if p.measured]
    if not both:
        return None, None
    return (geometric_mean([p.measured for p in both]),
            geometric_mean([p.predicted for p in both]))
