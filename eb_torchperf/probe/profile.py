"""Mini-model workloads profiled per ATen operator with `torch.profiler` (in the target).

The experts of https://github.com/easybuilders/easybuild/issues/931 asked for a
profile of the slowest model on both builds ("I'd expect to see a single issue very
visibly there").  Each workload here is one step of a TorchBench-like model at the
suite's quick size; `profile_workload` runs it under
`torch.profiler.profile(activities=[ProfilerActivity.CPU])` (torch >= 1.8, so every
torch the probe supports) and returns self CPU time per operator from
`key_averages()`.  Standard library and torch only; nothing runs at import time.
"""

import dataclasses
import math
import time
from typing import Callable, Dict

from . import suite_cpu, suite_models

#: Profiled seconds per request: iterations are added until they would exceed this
#: (at least one).  Debian's reference-BLAS torch takes ~1.4 s per BERT training step
#: on the 2-core dev machine, so slow builds profile one iteration per request.
DEFAULT_BUDGET_S = 0.5
#: Profile requests per side and workload (explain --profile-rounds): three, so that
#: analysis.profile_diff pools them by their median and one request the shared host
#: slowed down does not move the profile.
DEFAULT_ROUNDS = 3
#: Upper bound on profiled iterations, so a very fast build does not record huge traces.
MAX_ITERATIONS = 50
#: `FunctionEventAvg` times are in microseconds.
_US = 1e-6


@dataclasses.dataclass(frozen=True)
class Workload:
    """One profiled mini-model step.

    Attributes:
        name: stable identifier, e.g. "bert_layer_infer".
        setup: (torch) -> zero-argument callable running one step.
        description: one line for reports.
    """

    name: str
    setup: Callable
    description: str


def _setup_bert(train: bool):
    params = dict(suite_cpu._BERT[suite_cpu.QUICK][0])

    def setup(torch):
        if train:
            return suite_cpu._setup_bert_train(torch, params)
        return suite_cpu._setup_bert_infer(torch, params)
    return setup


def _setup_resnet_block(torch, batch=2, channels=64, hw=56):
    """ResNet basic block (conv-bn-relu-conv-bn + identity, relu), eval, no grad."""
    nn = torch.nn
    torch.manual_seed(0)
    conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
    conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
    bn1, bn2 = nn.BatchNorm2d(channels).eval(), nn.BatchNorm2d(channels).eval()
    x = torch.randn(batch, channels, hw, hw)

    def call():
        with torch.no_grad():
            y = torch.relu(bn1(conv1(x)))
            torch.relu(bn2(conv2(y)) + x)
    return call


def _mlp(torch, sizes):
    layers = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def _setup_dlrm(torch, batch=512, tables=4, rows=100000, dim=64, per_bag=20, dense=13):
    """DLRM-like step: bottom MLP on dense features, embedding bags, concat, top MLP."""
    torch.manual_seed(0)
    bags = [torch.nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables)]
    bottom = _mlp(torch, (dense, 256, dim))
    top = _mlp(torch, (dim * (tables + 1), 512, 256, 1))
    x = torch.randn(batch, dense)
    indices = torch.randint(0, rows, (batch * per_bag,))
    offsets = torch.arange(0, batch * per_bag, per_bag)

    def call():
        with torch.no_grad():
            features = [torch.relu(bottom(x))] + [bag(indices, offsets) for bag in bags]
            torch.sigmoid(top(torch.cat(features, dim=1)))
    return call


#: name -> Workload, in report order.  The BERT steps are the suite's own setups.
WORKLOADS: Dict[str, Workload] = {w.name: w for w in (
    Workload("bert_layer_infer", _setup_bert(False),
             "BERT-base-like encoder layer, eval forward (suite quick size)"),
    Workload("bert_layer_train", _setup_bert(True),
             "BERT-base-like encoder layer, forward + backward (suite quick size)"),
    Workload("resnet_block", _setup_resnet_block,
             "ResNet basic block, 64 channels 56x56, batch 2, eval"),
    Workload("dlrm", _setup_dlrm,
             "DLRM-like: 4 EmbeddingBag(100k x 64) + bottom/top MLP, batch 512"),
)}


#: The micro workloads above: what `explain` profiles by default.
DEFAULT_WORKLOADS = tuple(WORKLOADS)


def _setup_model(model: str, mode: str):
    params = suite_models.MODEL_TABLE[model][0]

    def setup(torch):
        return suite_models.make_step(torch, params, mode)
    return setup


#: The models suite's CPU rows (probe/suite_models), one workload per benchmark name:
#: profiled when asked for (`explain --workload resnet50_infer`, or `audit --explain`
#: after an audit that ran them), their profiles weight the micro-suite rows in
#: model_prediction.
MODEL_WORKLOADS = tuple(suite_models.bench_name(model, mode)
                        for model in suite_models.MODEL_TABLE for mode in suite_models.MODES)
for _model in suite_models.MODEL_TABLE:
    for _mode in suite_models.MODES:
        WORKLOADS[suite_models.bench_name(_model, _mode)] = Workload(
            suite_models.bench_name(_model, _mode), _setup_model(_model, _mode),
            "%s, %s (models suite, CPU size)" % (suite_models.MODEL_TABLE[_model][2],
                                                 "inference" if _mode == "infer"
                                                 else "one training step"))


#: GEMM operators whose calls are split by shape.  A GEMM's speed gap between two BLAS
#: libraries depends on its shape: alexnet's classifier at batch 4 (4 x 9216 by 9216 x
#: 4096, 2 flop per byte moved) streams its weights and ran at 15 % of the wheel on
#: Debian's reference BLAS, a 1024^3 GEMM (170 flop/B) at 3 % (issue 17, 2-core VM).
#: So each call's arithmetic intensity is recorded with the operator
#: (INTENSITY_TAG), and model_prediction prices it between the micro-suite's GEMM rows
#: of lower and higher intensity.  The im2col convolution is a GEMM per image too.
GEMM_OPS = frozenset(("aten::addmm", "aten::mm", "aten::linear", "aten::matmul",
                      "aten::_addmm_activation"))
CONV_GEMM_OPS = frozenset(("aten::_slow_conv2d_forward", "aten::thnn_conv2d_forward",
                           "aten::_slow_conv2d_backward", "aten::thnn_conv2d_backward",
                           "aten::slow_conv2d_backward"))
#: oneDNN's convolution forward and the convolution backward, tagged like the im2col
#: ones with the intensity of the GEMM one image and one group would be (oneDNN's
#: direct and Winograd kernels are not GEMMs, but the tag tells a depthwise
#: convolution, 0.5 flop/B, from a 3x3 on 256 channels, ~100): model_prediction prices
#: each call off the convolution rows that ran on the same path, at their intensity
#: (issue 17: the wheel ran mobilenet_v3's depthwise convolutions at batch 2 no faster
#: than Debian's torch 1.13, its 3x3 at batch 16 twice as fast).
CONV_KERNEL_OPS = frozenset(("aten::mkldnn_convolution", "aten::convolution_backward",
                             "aten::mkldnn_convolution_backward"))
#: Appended to a GEMM operator's name: "aten::addmm [2.0 flop/B]" (two significant
#: digits of the fp32 flop per byte of one call; analysis.profile_diff.INTENSITY_TAG
#: reads it back).
INTENSITY_TAG = " [%s flop/B]"


def gemm_dims(op: str, shapes):
    """(M, K, N) of one GEMM call from the profiler's `input_shapes` (a list of shapes,
    scalars and lists as []), else None.  Leading dimensions of a batched operand count
    as rows (tokens = batch x seq).  Convolutions (CONV_GEMM_OPS, CONV_KERNEL_OPS): one
    image's and one group's GEMM, M = output channels per group, K = input channels
    per group x kernel, N = the (input) pixels, the groups read off the weight
    (input channels / the weight's second dimension); the backward reads the pixels
    off grad_output."""
    mats = [list(sh) for sh in (shapes or ()) if sh is not None and len(sh) >= 2]
    try:
        if op == "aten::linear" and len(mats) >= 2:
            x, w = mats[0], mats[1]
            return math.prod(x[:-1]), x[-1], w[0]
        if op in GEMM_OPS and len(mats) >= 2:
            a, b = mats[-2], mats[-1]
            return math.prod(a[:-1]), a[-1], b[-1]
        if op in CONV_GEMM_OPS or op in CONV_KERNEL_OPS:
            four = [m for m in mats if len(m) == 4]
            if "backward" in op and len(four) >= 3:     # grad_output, input, weight
                (_, cout, h, w), (_, c, _, _), (_, per_group, kh, kw) = four[:3]
            elif "backward" not in op and len(four) >= 2:
                (_, c, h, w), (cout, per_group, kh, kw) = four[0], four[1]
            else:
                return None
            groups = c // per_group if per_group and c % per_group == 0 else 1
            return cout // groups, per_group * kh * kw, h * w
    except (TypeError, ValueError, IndexError):
        return None
    return None


def intensity(m: int, k: int, n: int) -> float:
    """fp32 arithmetic intensity of an M x K by K x N GEMM: 2MKN flop over the
    4(MK + KN + MN) bytes of its three matrices (flop/B)."""
    return 2.0 * m * k * n / (4.0 * (m * k + k * n + m * n))


def intensity_tag(value: float) -> str:
    """INTENSITY_TAG with `value` to two significant digits ("2.0", "77", "170")."""
    digits = "%.2g" % value
    if "e" in digits:
        digits = "%d" % round(float(digits))
    elif "." not in digits and value < 10:
        digits += ".0"
    return INTENSITY_TAG % digits


def _op_rows(events) -> list:
    """One dict per operator of `prof.key_averages(group_by_input_shape=True)`: name,
    self/total CPU s, calls; events of one operator with different shapes are summed,
    except that GEMM calls (GEMM_OPS, CONV_GEMM_OPS) and oneDNN convolutions
    (CONV_KERNEL_OPS) are summed per intensity, as "<op> [I flop/B]" (intensity_tag)."""
    rows = {}
    for e in events:
        name = e.key
        if name in GEMM_OPS or name in CONV_GEMM_OPS or name in CONV_KERNEL_OPS:
            dims = gemm_dims(name, getattr(e, "input_shapes", None))
            if dims and min(dims) > 0:
                name += intensity_tag(intensity(*dims))
        row = rows.setdefault(name, {"name": name, "self_cpu_s": 0.0, "cpu_total_s": 0.0,
                                     "calls": 0})
        row["self_cpu_s"] += e.self_cpu_time_total * _US
        row["cpu_total_s"] += e.cpu_time_total * _US
        row["calls"] += int(e.count)
    return list(rows.values())


#: call_kernels: kernels reported at most, the share of the calls' self CPU time below
#: which an operator is not one, and the calls profiled together.
CALL_KERNELS_TOP = 3
CALL_KERNELS_MIN_SHARE = 0.1
CALL_KERNELS_CALLS = 3


def call_kernels(torch, fn) -> list:
    """The ATen operators that held the self CPU time of CALL_KERNELS_CALLS calls of
    `fn`, largest first: at most CALL_KERNELS_TOP, each with >= CALL_KERNELS_MIN_SHARE
    of the calls ("aten::_slow_conv2d_forward" where torch 1.13 on one thread took a
    1x1 convolution at batch < 16 to im2col + BLAS, "aten::mkldnn_convolution" on
    oneDNN).  One profiled call alone now and then charged the profiler's start to the
    outer operator (Debian's torch 1.13 on the 2-core VM read "aten::conv2d" first in
    1 of 25 fresh processes, 0 of 25 with 3 calls), so several calls are summed.

    Returns:
        a list of operator names (empty where the profiler recorded nothing).
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(CALL_KERNELS_CALLS):
            fn()
    # without record_shapes no call has shapes, so _op_rows tags none
    events = [(row["self_cpu_s"], row["name"]) for row in _op_rows(prof.key_averages())
              if row["name"].startswith("aten::")]
    total = sum(max(t, 0) for t, _ in events)
    if total <= 0:
        return []
    ranked = sorted(events, key=lambda e: -e[0])[:CALL_KERNELS_TOP]
    return [name for t, name in ranked if t >= CALL_KERNELS_MIN_SHARE * total]


def profile_workload(torch, name: str, budget_s: float = DEFAULT_BUDGET_S,
                     max_iterations: int = MAX_ITERATIONS,
                     timer: Callable[[], float] = time.perf_counter) -> dict:
    """Profile `iterations` steps of workload `name` at the process's thread settings.

    One untimed step comes first (allocation, lazy init, and a process that was idle
    runs slowly for its next 5-20 ms); its duration sets the number of profiled steps.

    Returns:
        {"workload", "iterations", "wall_s" (seconds for all profiled steps),
        "threads" (torch.get_num_threads()), "torch_version", "ops": one dict per
        operator with "self_cpu_s"/"cpu_total_s" summed over the steps and "calls";
        GEMM calls per arithmetic intensity as "<op> [I flop/B]" (gemm_dims)}.

    Raises:
        KeyError: unknown workload name.
    """
    from torch.profiler import ProfilerActivity, profile

    step = WORKLOADS[name].setup(torch)
    start = timer()
    step()
    per_step = max(timer() - start, 1e-9)
    iterations = int(max(1, min(max_iterations, budget_s // per_step)))
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        start = timer()
        for _ in range(iterations):
            step()
        wall = timer() - start
    return {"workload": name, "iterations": iterations, "wall_s": wall,
            "threads": torch.get_num_threads(), "torch_version": torch.__version__,
            "ops": _op_rows(prof.key_averages(group_by_input_shape=True))}
