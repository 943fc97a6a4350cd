"""The computation each benchmark row's numerics check runs (probe.numerics.measure).

A check repeats its row's operation at the row's shapes on formula inputs (numerics.
Maker), except where NUMERICS_ROWS caps a size that only makes the check slower: the
rows of an elementwise or normalisation kernel are independent, so fewer of them run
the same kernel; the inner (summed) dimension K is kept, except the attention length
of the transformer-layer rows (NUMERICS_TOKENS) and batch norm's batch.  The caps keep
the check's cost within 5 % of the quick audit (issue 30).

Rows without a check (dispatch, launch, copies, all-reduce: nothing computed, or only
moved) record no numerics.  Whole models: model_numerics (loss and gradient norm).
"""

import dataclasses
from typing import Callable, Dict


#: At most this many independent rows (elementwise / normalisation / bags) per check;
#: convolutions and batch norm check at most 2 images.
NUMERICS_ROWS = 256
#: At most this many tokens (batch x seq) per transformer-layer check.
NUMERICS_TOKENS = 32
#: Parameter gradients up to this many elements are compared (_weighted_grads).
GRAD_NUMEL = 1 << 20
#: The GPU suites' dtype names (probe.suite_gpu.DTYPES) -> precision of the row.
GPU_PRECISION = {"bf16": "bfloat16", "fp16": "float16", "tf32": "tf32", "fp32": "float32"}


@dataclasses.dataclass(frozen=True)
class Check:
    """One row's numerics computation.

    Attributes:
        compute: (torch, params, Maker) -> output tensor, or a tuple (output, gradients).
        depth: params -> K, the longest sum of one output element.
        precision: params -> the row's precision (numerics.UNIT_ROUNDOFF key).
        chain: rounding operations chained (numerics.bound).
    """

    compute: Callable
    depth: Callable[[dict], int]
    precision: Callable[[dict], str] = lambda p: p.get("dtype", "float32")
    chain: int = 1


def _matmul(torch, p, mk):
    a = mk.tensor(p["n"], p["n"], salt=1)
    b = mk.tensor(p["n"], p["n"], salt=2)
    return torch.mm(a, b)


def _linear(torch, p, mk):
    layer = mk.module(torch.nn.Linear(p["in"], p["out"]))
    with torch.no_grad():
        return layer(mk.tensor(p["tokens"], p["in"], salt=1))


def _conv3x3(torch, p, mk):
    conv = mk.module(torch.nn.Conv2d(p["channels"], p["channels"], 3, padding=1, bias=False))
    with torch.no_grad():
        return conv(mk.tensor(min(p["batch"], 2), p["channels"], p["hw"], p["hw"], salt=1))


def _conv_layer(torch, p, mk):
    groups = p["cin"] if p.get("depthwise") else 1
    conv = mk.module(torch.nn.Conv2d(p["cin"], p["cout"], p["k"], padding=p["k"] // 2,
                                     groups=groups, bias=False))
    return conv, mk.tensor(min(p["batch"], 2), p["cin"], p["hw"], p["hw"], salt=1)


def _conv_forward(torch, p, mk):
    conv, x = _conv_layer(torch, p, mk)
    with torch.no_grad():
        return conv(x)


def _weighted_grads(torch, mk, module, out, inputs=()):
    """(out, gradients) of sum(out * w) for a formula w: a loss whose gradients do
    not cancel to zero (the sum alone has zero LayerNorm-input gradients).  The
    inputs' gradients and those of parameters up to GRAD_NUMEL elements are compared
    (a weight gradient is one more GEMM; the largest only add cost)."""
    weight = mk.tensor(*out.shape, salt=11)
    (out * weight).sum().backward()
    grads = tuple(p.grad for p in module.parameters()
                  if p.grad is not None and p.numel() <= GRAD_NUMEL)
    return (out.detach(),) + grads + tuple(x.grad for x in inputs)


def _conv_train(torch, p, mk):
    conv, x = _conv_layer(torch, p, mk)
    x.requires_grad_(True)
    return _weighted_grads(torch, mk, conv, conv(x), (x,))


def _encoder(torch, p, mk):
    layer = torch.nn.TransformerEncoderLayer(p["hidden"], p["hidden"] // 64, 4 * p["hidden"],
                                             dropout=0.0, batch_first=True)
    seq = min(p["seq"], NUMERICS_TOKENS)
    return mk.module(layer), mk.tensor(1, seq, p["hidden"], salt=1)


def _bert_train(torch, p, mk):
    layer, x = _encoder(torch, p, mk)
    layer.train()
    x.requires_grad_(True)
    return _weighted_grads(torch, mk, layer, layer(x), (x,))


def _bert_infer(torch, p, mk):
    layer, x = _encoder(torch, p, mk)
    layer.eval()
    with torch.no_grad():
        return layer(x)


def _unary(op_name):
    def compute(torch, p, mk):
        x = mk.tensor(min(p["rows"], NUMERICS_ROWS), p["cols"], salt=1, scale=3.0)
        with torch.no_grad():
            if op_name == "layernorm":
                return mk.module(torch.nn.LayerNorm(p["cols"]))(x)
            if op_name == "softmax":
                return torch.softmax(x, dim=-1)
            return torch.nn.functional.gelu(x)
    return compute


def _batchnorm(torch, p, mk):
    norm = mk.module(torch.nn.BatchNorm2d(p["channels"]))
    norm.train(p["mode"] == "train")
    with torch.no_grad():
        return norm(mk.tensor(min(p["batch"], 2), p["channels"], p["hw"], p["hw"], salt=1))


def _embedding_bag(torch, p, mk):
    rows, bags = min(p["rows"], 64 * NUMERICS_ROWS), min(p["bags"], NUMERICS_ROWS)
    bag = mk.module(torch.nn.EmbeddingBag(rows, p["dim"], mode="sum"))
    indices = mk.indices(bags * p["per_bag"], rows, salt=3)
    offsets = torch.arange(0, bags * p["per_bag"], p["per_bag"], device=mk.device)
    with torch.no_grad():
        return bag(indices, offsets)


def _add(torch, p, mk):
    numel = min(p["numel"], 4 * NUMERICS_ROWS * NUMERICS_ROWS)
    return torch.add(mk.tensor(numel, salt=1), mk.tensor(numel, salt=2))


def _denormal(torch, p, mk):
    # The row's own values (1e-39: below float32's smallest normal) times formula
    # factors in [0.5, 1).  The float64 computation starts from 1e-39 itself: where the
    # process flushes denormals (FTZ/DAZ), the row's float32 input is already zero.
    value = 1e-39 if p["values"] == "denormal" else 1.0
    x = torch.full((p["numel"],), value, dtype=mk.dtype if mk.exact else mk.storage)
    y = (mk.tensor(p["numel"], salt=5).abs() * 0.5 + 0.5).to(mk.storage).to(mk.dtype)
    return torch.addcmul(x.to(mk.dtype), x.to(mk.dtype), y)


CPU_CHECKS: Dict[str, Check] = {
    "matmul_fp32": Check(_matmul, lambda p: p["n"]),
    "matmul_bf16": Check(_matmul, lambda p: p["n"]),
    "thread_scaling": Check(_matmul, lambda p: p["n"]),
    "linear": Check(_linear, lambda p: p["in"]),
    "linear_small_batch": Check(_linear, lambda p: p["in"]),
    "conv3x3": Check(_conv3x3, lambda p: 9 * p["channels"]),
    "conv1x1": Check(_conv_forward, lambda p: p["k"] ** 2 * p["cin"]),
    "conv_depthwise": Check(_conv_forward, lambda p: p["k"] ** 2),
    "conv_train": Check(_conv_train, lambda p: max(p["k"] ** 2 * p["cin"],
                                                   2 * p["hw"] ** 2), chain=2),
    # a layer: QKV / out / two FFN GEMMs, softmax, two LayerNorms (training: and back)
    "bert_layer_infer": Check(_bert_infer, lambda p: 4 * p["hidden"], chain=4),
    "bert_layer_train": Check(_bert_train, lambda p: 4 * p["hidden"], chain=8),
    "layernorm": Check(_unary("layernorm"), lambda p: p["cols"], chain=2),
    "softmax": Check(_unary("softmax"), lambda p: p["cols"], chain=2),
    "gelu": Check(_unary("gelu"), lambda p: 1, chain=2),
    "batchnorm": Check(_batchnorm, lambda p: p["batch"] * p["hw"] ** 2, chain=2),
    "embedding_bag": Check(_embedding_bag, lambda p: p["per_bag"]),
    "add_bandwidth": Check(_add, lambda p: 1),
    "denormal": Check(_denormal, lambda p: 1),
}
