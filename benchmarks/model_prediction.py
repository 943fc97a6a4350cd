"""Predict each model's relative OPS from the micro-suite rows, weighted by its profile.

The micro-suite's geometric mean weighs every row alike; a model spends its time in a
few operator families (resnet50: convolutions and batch norm; BERT: GEMM).  So each
model's prediction weights the micro rows by the model's own profile (explain's
per-operator profile of the model workload, probe/profile.MODEL_WORKLOADS):

1. every profiled operator is put in one family (FAMILIES: GEMM, convolution forward
   and backward on oneDNN and on the im2col + BLAS path, batch norm, other vectorised
   kernels, embedding, fused attention, per-op overhead) by its canonical name
   (profile_diff.canonical_op); the GEMM and convolution calls also by the
   arithmetic intensity the probe tagged them with (probe.profile.gemm_dims:
   "gemm@2.0" for alexnet's classifier at batch 4, "conv@0.5" for a depthwise
   convolution on oneDNN).  The convolution path is read off
   the profile, not guessed: torch 1.13 sends a 1x1 convolution at batch < 16 to the
   im2col + BLAS path when it runs one thread ("THNN is faster when single-threaded",
   aten/src/ATen/native/ConvUtils.h use_mkldnn), so Debian's resnet50 spends 97 % of
   its inference gap in aten::_slow_conv2d_forward, i.e. in reference BLAS;
2. each family's weight is its share of the REFERENCE's self CPU time per step: how
   the fast build spends a step, i.e. the work mix, independent of the target's gaps;
   except that where one piece of work has two kernel paths (PATH_GROUPS: convolution
   on oneDNN or on im2col + BLAS), the target's profile says which path it took
   (routed_weights);
3. each family's relative OPS is the geometric mean of the audit's micro rows for
   that family (FAMILY_ROWS, an inconclusive row with its estimate: row_ratio;
   families without a measured row are left out and the weights renormalised, and the
   prediction says which); a tagged GEMM's is read off
   the curve of the fp32 GEMM rows over their intensity (gemm_curve, on_curve): on
   Debian's reference BLAS a 2 flop/B GEMM ran at 15 % of the wheel, a 170 flop/B one
   at 3 % (issue 17); a tagged convolution's off the curve of the convolution rows
   that the target ran on the same path (conv_curve: each conv row records the
   kernel it ran, compare.Rate.kernels), else as its family;
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
from eb_torchperf.analysis.profile_diff import (INTENSITY_TAG, PROFILE_AGREEMENT, ProfileDiff,
                                               WorkloadProfile, backend_of, canonical_op)
from eb_torchperf.analysis.stats import geometric_mean
from eb_torchperf.probe.profile import intensity

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
    # the dispatcher's frames above a convolution kernel: their self time is per call,
    # not per FLOP (Debian's torch 1.13 spent 6 ms of a mobilenet_v3 step in
    # aten::conv2d itself, 100 µs a call; issue 17)
    ("overhead", "per-op overhead (autograd, views, dispatch)",
     r"^aten::(conv\dd|convolution|_convolution)$"),
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


#: Families whose operators the probe tags with each call's arithmetic intensity
#: (probe.profile.gemm_dims): a tagged operator gets the key "<family>@<flop/B>" and is
#: priced at its own intensity: a GEMM off the GEMM curve (gemm_curve), a convolution
#: off the curve of the convolution rows the target ran on the same path (conv_curve;
#: the GEMM curve, or the family's rows, where there is none).
TAGGED_FAMILIES = ("gemm", "conv_gemm", "conv_gemm_backward", "conv", "conv_backward")
#: fp32 GEMM micro rows -> (M, K, N) of one call: the points of the GEMM curve.
GEMM_POINT_ROWS = {
    "matmul_fp32": lambda p: (p["n"], p["n"], p["n"]),
    "linear": lambda p: (p["tokens"], p["in"], p["out"]),
    "linear_small_batch": lambda p: (p["tokens"], p["in"], p["out"]),
}


def family_of(op: str) -> str:
    """The prediction family of profiler operator name `op`; "<family>@<flop/B>" for a
    GEMM operator the probe tagged with its intensity ("aten::addmm [2.0 flop/B]" ->
    "gemm@2.0")."""
    op = canonical_op(op)
    tag = INTENSITY_TAG.match(op)
    base = tag.group("op") if tag else op
    family = next((key for key, _, pattern in FAMILIES if pattern and re.match(pattern, base)),
                  None) or FALLBACK[backend_of(base).key]
    if tag and family in TAGGED_FAMILIES:
        return "%s@%s" % (family, tag.group("intensity"))
    return family


def base_family(key: str) -> str:
    """The family of a family key: "gemm@2.0" -> "gemm"."""
    return key.split("@", 1)[0]


def _conv_dims(p):
    """(M, K, N) of one image's and one group's GEMM of a suite_cpu_layers convolution
    row (a depthwise one has cin groups), as probe.profile.gemm_dims reads a call."""
    groups = p["cin"] if p.get("depthwise") else 1
    return p["cout"] // groups, p["cin"] // groups * p["k"] ** 2, p["hw"] ** 2


#: Convolution micro rows -> (M, K, N) as probe.profile.gemm_dims gives it for a
#: convolution call: the points of the convolution curves (conv_curve).  conv_train
#: (forward + backward) stands for the backward paths (row_path).
CONV_POINT_ROWS = {
    "conv1x1": _conv_dims,
    "conv_depthwise": _conv_dims,
    "conv3x3": lambda p: (p["channels"], p["channels"] * 9, p["hw"] ** 2),
    "conv_train": _conv_dims,
}


def row_path(c: Comparison) -> Optional[str]:
    """The path family (PATH_GROUPS) of the kernels row `c` ran on the target: a
    backward one where any recorded kernel is a convolution backward (a training row),
    else the first forward one; e.g. "conv_gemm" for a 1x1 convolution that the target
    ran on im2col + BLAS (aten::_slow_conv2d_forward).  None where the row recorded no
    kernels (compare.Rate.kernels) or none of a path family."""
    families = [family_of(k) for k in (c.target.kernels if c.target is not None else ())]
    for direction in (BACKWARD_PATHS, FORWARD_PATHS):
        hit = next((f for f in families if f in direction), None)
        if hit:
            return hit
    return None


def _on_one_path(c: Comparison, family: str) -> bool:
    """False when row `c` stands for `family` but its target took another path of the
    same PATH_GROUPS group (a conv1x1 row on im2col + BLAS is no oneDNN "conv" row)."""
    path = row_path(c)
    return path is None or path == family or not any(
        family in group and path in group for group in PATH_GROUPS)


def _merged_points(points: List[Tuple[float, float]]) -> List[Tuple[float, float]]:
    """`points` (intensity, relative OPS) by intensity, those within 10 % of one
    intensity merged into one (geometric mean)."""
    points = sorted(points)
    merged: List[List[float]] = []
    for x, ratio in points:
        if merged and math.log(x / merged[-1][0]) < math.log(1.1):
            merged[-1][1].append(ratio)
        else:
            merged.append([x, [ratio]])
    return [(x, geometric_mean(ratios)) for x, ratios in merged]


def row_ratio(c: Comparison) -> Optional[float]:
    """The relative OPS micro row `c` prices its family at: relative_ops, else the
    estimate of an inconclusive row.  Inconclusive says the row cannot be told from
    equal within ±10 %, not that it has no value, and a model spends its time in such
    rows too: Debian's 5x5 depthwise convolution at batch 2 (mobilenet_v3's) was
    inconclusive, and without it the depthwise calls of the model were priced off the
    3x3 row alone (issue 17, 2-core VM)."""
    return c.relative_ops if c.relative_ops is not None else c.estimate


def _points(comparisons: Sequence[Comparison], rows, keep=lambda c: True
            ) -> List[Tuple[float, float]]:
    points = []
    for c in comparisons:
        if c.bench in rows and row_ratio(c) and keep(c):
            try:
                dims = rows[c.bench](c.params)
                if dims:
                    points.append((intensity(*dims), row_ratio(c)))
            except (KeyError, TypeError, ZeroDivisionError):
                continue                    # a row of another shape vocabulary: no point
    return points


def gemm_curve(comparisons: Sequence[Comparison]) -> List[Tuple[float, float]]:
    """(intensity flop/B, relative OPS) of the measured fp32 GEMM micro rows
    (GEMM_POINT_ROWS), by intensity; rows within 10 % of one intensity are one point
    (geometric mean: matmul 512^3 and the 256-token Linear are both 85 flop/B)."""
    return _merged_points(_points(comparisons, GEMM_POINT_ROWS))


def conv_curve(comparisons: Sequence[Comparison], path: str = "conv_gemm"
               ) -> List[Tuple[float, float]]:
    """(intensity flop/B, relative OPS) of the convolution rows (CONV_POINT_ROWS) that
    the target ran on `path` ("conv_gemm": im2col + BLAS, "conv": oneDNN, and their
    backwards "conv_gemm_backward", "conv_backward"; row_path), by the intensity of
    one image's and one group's GEMM; merged like gemm_curve.

    Such a row times what a convolution of the model costs on the target against what
    the same convolution costs on the reference's own path, which a GEMM row does not:
    the wheel's oneDNN on two threads ran a 3x3 convolution at batch 16 twice as fast
    as Debian's oneDNN on one, and mobilenet_v3's depthwise ones at batch 2 no faster
    (issue 17, 2-core VM)."""
    return _merged_points(_points(comparisons, CONV_POINT_ROWS,
                                  lambda c: row_path(c) == path))


def on_curve(curve: Sequence[Tuple[float, float]], flop_per_byte: float) -> float:
    """Relative OPS at `flop_per_byte`: linear in log-log between the two nearest points
    of `curve`, the end point's value beyond either end.

    Raises:
        ValueError: an empty curve.
    """
    if not curve:
        raise ValueError("no GEMM row measured")
    if flop_per_byte <= curve[0][0]:
        return curve[0][1]
    for (x0, r0), (x1, r1) in zip(curve, curve[1:]):
        if flop_per_byte <= x1:
            t = math.log(flop_per_byte / x0) / math.log(x1 / x0)
            return math.exp(math.log(r0) + t * (math.log(r1) - math.log(r0)))
    return curve[-1][1]


def family_weights(diff: ProfileDiff) -> Dict[str, float]:
    """Family -> share of the reference's self CPU time per step (sums to 1).

    Operators with a negative self time (torch.profiler rounding) count as zero.

    Raises:
        ValueError: the reference profile has no positive time.
    """
    times = _family_times(diff.reference)
    total = sum(times.values())
    if total <= 0:
        raise ValueError("%s: the reference profile has no time" % diff.workload)
    return {k: v / total for k, v in sorted(times.items(), key=lambda kv: -kv[1]) if v > 0}


def family_ratios(comparisons: Sequence[Comparison]) -> Dict[str, Tuple[float, Tuple[str, ...]]]:
    """Family -> (geometric mean relative OPS of its measured micro rows, row labels);
    an inconclusive row counts with its estimate (row_ratio)."""
    by_bench: Dict[str, List[Comparison]] = {}
    for c in comparisons:
        if row_ratio(c) and not is_model(c):
            by_bench.setdefault(c.bench, []).append(c)
    ratios = {}
    for family, benches in FAMILY_ROWS.items():
        rows = [c for b in benches for c in by_bench.get(b, ()) if _on_one_path(c, family)]
        if rows:
            ratios[family] = (geometric_mean([row_ratio(c) for c in rows]),
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
        measured: the model's measured relative OPS (None where not measured, or
            inconclusive).
        profiled: the profile's own relative OPS of the model (ProfileDiff.relative_ops);
            off `measured` by more than profile_diff.PROFILE_AGREEMENT, the profile
            was not the step the audit timed, and neither is the prediction.
    """

    bench: str
    predicted: float
    predicted_geomean: float
    weights: Dict[str, float]
    ratios: Dict[str, float]
    uncovered: float
    measured: Optional[float] = None
    profiled: Optional[float] = None

    @property
    def factor(self) -> Optional[float]:
        """max(predicted / measured, measured / predicted): 1.0 is exact."""
        if not self.measured:
            return None
        return max(self.predicted / self.measured, self.measured / self.predicted)

    @property
    def profile_factor(self) -> Optional[float]:
        """max(profiled / measured, measured / profiled); None without both."""
        if not self.measured or not self.profiled:
            return None
        return max(self.profiled / self.measured, self.measured / self.profiled)

    @property
    def profile_off(self) -> bool:
        """True when profile_factor exceeds profile_diff.PROFILE_AGREEMENT: the profile
        that weights the prediction was not the step the audit timed."""
        return self.profile_factor is not None and self.profile_factor > PROFILE_AGREEMENT


#: Families that are one piece of work on two kernel paths, where the build and the
#: shape choose the path: Debian's torch 1.13, which runs one thread, sends resnet50's
#: 1x1 convolutions at batch 1 to im2col + BLAS (aten::_slow_conv2d_forward), while the
#: wheel on two threads runs them on oneDNN; weighted by the reference's ops alone the
#: slow path had no weight and resnet50 was predicted at 30 % against 9 % measured
#: (issue 17, 2-core VM).
FORWARD_PATHS, BACKWARD_PATHS = ("conv", "conv_gemm"), ("conv_backward", "conv_gemm_backward")
PATH_GROUPS = (FORWARD_PATHS, BACKWARD_PATHS)


def _family_times(profile: WorkloadProfile) -> Dict[str, float]:
    """Family key -> self CPU seconds per step of one side's raw profile (the probe's
    intensity tags intact; negative self times count as zero)."""
    times: Dict[str, float] = {}
    for op in profile.ops:
        key = family_of(op.name)
        times[key] = times.get(key, 0.0) + max(op.self_s, 0.0)
    return times


def routed_weights(diff: ProfileDiff, weights: Dict[str, float],
                   ratios: Dict[str, Tuple[float, Tuple[str, ...]]],
                   target: Optional[Dict[str, float]] = None) -> Dict[str, float]:
    """`weights` with each PATH_GROUPS group's reference share split over the paths the
    TARGET took, where those differ from the reference's: path k gets the share in
    proportion to T_k x r_k (the target's self time on k times k's relative OPS: the
    reference's time for the same work).  A group is left as it is when both sides
    took the same paths, or when the target spent time on a path without a micro row."""
    weights = dict(weights)
    target = _family_times(diff.target) if target is None else target
    for group in PATH_GROUPS:
        members = lambda keys: [k for k in keys if base_family(k) in group]  # noqa: E731
        share = sum(weights[k] for k in members(weights))
        paths = [k for k in members(target) if target[k] > 0]
        if (share <= 0 or not paths or any(k not in ratios for k in paths)
                or set(paths) == set(members(weights))):
            continue                        # the target took the reference's paths
        work = {k: target[k] * ratios[k][0] for k in paths}
        for k in members(list(weights)):
            del weights[k]
        weights.update({k: share * w / sum(work.values()) for k, w in work.items()})
    return weights


def predict(diff: ProfileDiff, comparisons: Sequence[Comparison]) -> Optional[Prediction]:
    """Predict the model of profile `diff` from the micro rows in `comparisons`.

    Returns:
        the Prediction, or None when no family of the model has a measured micro row.
    """
    ratios = family_ratios(comparisons)
    curve = gemm_curve(comparisons)
    conv = {path: conv_curve(comparisons, path) for group in PATH_GROUPS for path in group}
    weights, target = family_weights(diff), _family_times(diff.target)
    for key in sorted(k for k in set(weights) | set(target) if "@" in k):
        flop_per_byte, family = float(key.split("@", 1)[1]), base_family(key)
        if conv.get(family):
            ratios[key] = (on_curve(conv[family], flop_per_byte), tuple(CONV_POINT_ROWS))
        elif family in ("conv", "conv_backward"):
            if family in ratios:                # oneDNN's: priced as its family's rows
                ratios[key] = ratios[family]
        elif curve:
            ratios[key] = (on_curve(curve, flop_per_byte), tuple(GEMM_POINT_ROWS))
        elif base_family(key) in ratios:
            ratios[key] = ratios[base_family(key)]
    weights = routed_weights(diff, weights, ratios, target)
    covered = {k: w for k, w in weights.items() if k in ratios}
    if not covered:
        return None
    total = sum(covered.values())
    covered = {k: w / total for k, w in covered.items()}
    additive = 1.0 / sum(w / ratios[k][0] for k, w in covered.items())
    geo = math.exp(sum(w * math.log(ratios[k][0]) for k, w in covered.items()))
    measured = next((c.relative_ops for c in comparisons if c.bench == diff.workload), None)
    return Prediction(diff.workload, additive, geo, covered,
                      {k: ratios[k][0] for k in covered}, 1.0 - total, measured,
                      diff.relative_ops)


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
