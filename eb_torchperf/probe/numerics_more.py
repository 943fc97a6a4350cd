"""Numerics checks of the GPU rows and of whole models (see probe.numerics).

Every check runs in the math mode its row's timed calls ran in (suite_gpu.row_math_mode:
the tf32 rows allow TF32, every other row keeps the process's own mode) and records
that mode (`math_mode`, facts_more.fp32_math_mode), while its bound stays the row's
dtype's: a fp32 row that a module, site profile or TORCH_ALLOW_TF32_CUBLAS_OVERRIDE
turns to TF32 exceeds the fp32 bound (issue 30).  GPU rows compute on the device at
the row's inner dimension K and at most NUMERICS_GPU_ROWS independent rows or columns
(the float64 reference of an 8192^3 GEMM would be 1 TFLOP).  A fp32 convolution row is
judged at tf32: torch's default (torch.backends.cudnn.allow_tf32, True since torch 1.7).

Whole models (suite_models) record `loss` (mean square of the output, from formula
weights and inputs: no labels, no RNG) and, for a training row, `grad_norm` (2-norm
of all parameter gradients after one backward), with dropout set to 0; the host
compares the two sides' values (analysis.numerics).
"""

import contextlib
import math

from . import numerics, suite_models
from .facts_more import fp32_math_mode
from .numerics import Maker
from .numerics_checks import CPU_CHECKS, GPU_PRECISION, Check
from .suite_gpu import row_math_mode

#: At most this many independent rows / columns per GPU check.
NUMERICS_GPU_ROWS = 1024


def for_row(torch, bench, params):
    """The numerics dict of one row (probe.numerics.measure, or model_numerics for
    a model row) with its `math_mode`, computed in the mode the row's timed calls ran
    in; {} for a row without a check (nothing computed)."""
    with row_math_mode(torch, params.get("dtype")):  # only the GPU suites' "tf32" sets it
        if bench.name in suite_models.MODEL_ROWS:
            _, mode, device = suite_models.MODEL_ROWS[bench.name]
            found = model_numerics(torch, params, mode, device)
        else:
            check = CPU_CHECKS.get(bench.name) or GPU_CHECKS.get(bench.name)
            if check is None:
                return {}
            found = numerics.measure(torch, check, params, bench.device)
        return dict(found, math_mode=fp32_math_mode(torch))


def _gemm(torch, p, mk):
    rows, cols = min(p["m"], NUMERICS_GPU_ROWS), min(p["n"], NUMERICS_GPU_ROWS)
    return torch.mm(mk.tensor(rows, p["k"], salt=1), mk.tensor(p["k"], cols, salt=2))


def _linear_layer(torch, p, mk):
    layer = mk.module(torch.nn.Linear(p["in"], p["out"]))
    return layer, mk.tensor(min(p["tokens"], NUMERICS_GPU_ROWS), p["in"], salt=1)


def _linear_fwd(torch, p, mk):
    layer, x = _linear_layer(torch, p, mk)
    with torch.no_grad():
        return layer(x)


def _linear_train(torch, p, mk):
    layer, x = _linear_layer(torch, p, mk)
    x.requires_grad_(True)
    out = layer(x)
    out.backward(torch.ones_like(out))
    return (out.detach(), layer.weight.grad, x.grad)


def _conv(torch, p, mk):
    conv = mk.module(torch.nn.Conv2d(p["channels"], p["channels"], 3, padding=1, bias=False))
    conv = conv.to(memory_format=torch.channels_last)
    x = mk.tensor(2, p["channels"], p["hw"], p["hw"], salt=1)
    with torch.no_grad():
        return conv(x.to(memory_format=torch.channels_last))


def _sdpa(torch, p, mk):
    shape = (1, p["heads"], min(p["seq"], NUMERICS_GPU_ROWS), p["head_dim"])
    q, k, v = (mk.tensor(*shape, salt=s) for s in (1, 2, 3))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def _gpu(p):
    return GPU_PRECISION[p["dtype"]]


GPU_CHECKS = {
    "gemm_cuda": Check(_gemm, lambda p: p["k"], _gpu),
    "linear_cuda_fwd": Check(_linear_fwd, lambda p: p["in"], _gpu),
    "linear_cuda_train": Check(_linear_train, lambda p: max(p["in"], p["tokens"]), _gpu,
                               chain=2),
    "conv_cuda": Check(_conv, lambda p: 9 * p["channels"],
                       lambda p: "tf32" if p["dtype"] == "fp32" else _gpu(p)),
    "sdpa_cuda": Check(_sdpa, lambda p: max(p["seq"], p["head_dim"]), _gpu, chain=3),
}


def _formula_inputs(torch, p, mk, inputs):
    """The model's inputs rebuilt from the formula: float tensors of the same shape,
    embedding indices below p["rows"], other integer tensors (offsets) kept."""
    rebuilt = []
    for index, x in enumerate(inputs):
        if x.is_floating_point():
            rebuilt.append(mk.tensor(*x.shape, salt=index + 1).to(x.dtype))
        elif p.get("kind") == "dlrm" and index == 1:
            rebuilt.append(mk.indices(x.numel(), p["rows"], salt=index + 1).reshape(x.shape))
        else:
            rebuilt.append(x)
    return tuple(rebuilt)


def _no_dropout(torch, model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if isinstance(module, torch.nn.MultiheadAttention):
            module.dropout = 0.0


def model_numerics(torch, p, mode, device="cpu"):
    """{"loss", "grad_norm" (train only), "dtype"} of model row `p` from formula
    weights and inputs (module docstring).  Raises what the model raises."""
    model, inputs, _ = suite_models.build(torch, p, device)
    mk = Maker(torch, torch.float32, torch.float32, device)
    model = mk.module(model)
    inputs = _formula_inputs(torch, p, mk, inputs)
    _no_dropout(torch, model)
    autocast = mode == "infer" and p.get("bf16") and device == "cuda"
    result = {"dtype": "bfloat16" if autocast else "float32"}
    finite = lambda value: value if math.isfinite(value) else numerics.ERROR_CAP  # noqa: E731
    if mode == "infer":
        model.eval()
        with torch.no_grad(), (torch.autocast("cuda", torch.bfloat16) if autocast
                               else contextlib.nullcontext()):
            result["loss"] = finite(float(model(*inputs).double().pow(2).mean()))
        return result
    model.train()
    loss = model(*inputs).float().pow(2).mean()
    loss.backward()
    squares = sum(float(g.double().pow(2).sum()) for g in _dense_grads(model))
    result.update(loss=finite(float(loss.detach())), grad_norm=finite(math.sqrt(squares)))
    return result


def _dense_grads(model):
    for param in model.parameters():
        grad = param.grad
        if grad is not None:
            yield grad.to_dense() if grad.is_sparse else grad
