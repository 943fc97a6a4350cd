"""Models suite: whole TorchBench-like models, inference and one training step.

Why (https://github.com/easybuilders/easybuild/issues/931 and issue 17 of this
project): sites quote TorchBench's relative OPS per model, and the micro-suite's
geometric mean did not predict them (Debian's torch 1.13 vs the 2.13.0 wheel on the
2-core dev VM: resnet50 at 7-8 % while the conv3x3 row said 44 %).  So the models
themselves run in the same interleaved runner as every other row:

- torchvision's alexnet, mobilenet_v3_large, resnet50 and regnet_y_400mf (random
  weights, nothing downloaded), from the TARGET's own torchvision (Debian's package, an
  EasyBuild module); without one the rows are skipped with the reason;
- own definitions needing only torch: a BERT-base-sized encoder
  (``torch.nn.TransformerEncoder``: hidden 768, 12 heads, FFN 3072, GELU, seq 128), a
  DLRM-like model (EmbeddingBag tables, bottom/top MLP, dot interaction) and a
  GPT-style decoder block stack (causal self-attention + MLP, as nanoGPT: fused
  ``scaled_dot_product_attention`` where the torch has it, the explicit
  softmax(QK^T)V otherwise).

Each model runs as inference (eval, ``torch.no_grad``) and as one training step
(train mode: zero_grad, forward, loss, backward, ``torch.optim.SGD`` step).  CPU
batches: TorchBench's for alexnet, resnet50 and BERT; the others grow with the cores
(CPU_BATCH_CAP).
CUDA batches are TorchBench-like, inference under bf16 autocast as TorchBench does.

Time-bounded: ``min_rounds=1`` and their own budget, so a build at 1 % still ends.
Work per call is in FLOP (2 x multiply-adds; torchvision models from torchvision's
model tables, training = 3 x forward); relative OPS do not depend on it.

Standard library only at import: torch and torchvision are imported in the target.
"""

import importlib
import importlib.util
import math
import sys
import types
import warnings

from .registry import Benchmark, register, scaled
from .suite_gpu import cuda_unavailable

MODELS, FULL = "models", "full"
#: Rounds of a model row stop once it has used this long in one pair (both sides, after
#: its one round): a model at 1 % still ends (Debian, 2-core VM: 331 s in all; 3.5 s: 386).
MODEL_BUDGET_S = 2.5
#: The same on CUDA, where a step takes milliseconds: 2 s give tens of rounds.
CUDA_MODEL_BUDGET_S = 2.0
#: torchvision models: forward multiply-adds per 224x224 image, in G (torchvision's
#: model tables, the "GFLOPS" column, which counts multiply-adds).
TORCHVISION_GMACS = {"alexnet": 0.71, "mobilenet_v3_large": 0.22, "resnet50": 4.09,
                     "regnet_y_400mf": 0.40}
IMAGE_HW = 224
MODES = ("infer", "train")

_TV_CACHE = {}


def torchvision_models():
    """The target's ``torchvision.models`` module.

    A torchvision whose compiled ops do not load beside this torch (e.g. the PyPI
    torchvision 0.28 beside a ``+cpu`` torch 2.13: "operator torchvision::nms does
    not exist" from ``torchvision/__init__``) still has importable pure-Python model
    definitions: the package is then bound as a bare package (its ``__init__`` not
    run) and ``torchvision.models`` imported from it.  The models need none of the ops.

    Raises:
        ImportError: no torchvision, or its models cannot be imported either way
            (the message says why).
    """
    if "models" in _TV_CACHE:
        return _TV_CACHE["models"]
    if "error" in _TV_CACHE:
        raise ImportError(_TV_CACHE["error"])
    try:
        module = importlib.import_module("torchvision.models")
    except ModuleNotFoundError as exc:
        if exc.name != "torchvision":
            raise
        _TV_CACHE["error"] = ("torchvision is not installed beside this torch (Debian: "
                              "python3-torchvision; EasyBuild: load the torchvision module)")
        raise ImportError(_TV_CACHE["error"]) from None
    except Exception as first:  # noqa: BLE001 -- the ops extension failed; try the models only
        try:
            module = _models_without_ops()
        except Exception as exc:  # noqa: BLE001 -- becomes the availability reason
            _TV_CACHE["error"] = "torchvision does not import: %s: %s (models only: %s: %s)" % (
                type(first).__name__, first, type(exc).__name__, exc)
            raise ImportError(_TV_CACHE["error"]) from None
    _TV_CACHE["models"] = module
    return module


def _models_without_ops():
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]
    spec = importlib.util.find_spec("torchvision")
    package = types.ModuleType("torchvision")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__, package.__file__ = spec, spec.origin
    sys.modules["torchvision"] = package
    return importlib.import_module("torchvision.models")


def _torchvision_available(torch, facts):
    try:
        torchvision_models()
    except ImportError as exc:
        return str(exc)
    return None


def _cuda_torchvision_available(torch, facts):
    return cuda_unavailable(torch, facts) or _torchvision_available(torch, facts)


# -- model builders: (torch, params) -> (module, inputs tuple, loss(output) -> scalar) -----

def _build_torchvision(torch, p):
    factory = getattr(torchvision_models(), p["model"])
    try:
        model = factory(weights=None)
    except TypeError:  # torchvision < 0.13 has pretrained= only
        model = factory(pretrained=False)
    hw = p.get("hw", IMAGE_HW)  # smaller in tests
    x = torch.randn(p["batch"], 3, hw, hw)
    labels = torch.randint(0, 1000, (p["batch"],))
    return model, (x,), lambda out: torch.nn.functional.cross_entropy(out, labels)


def _build_bert(torch, p):
    h = p["hidden"]
    layer = torch.nn.TransformerEncoderLayer(h, h // 64, 4 * h, dropout=0.1,
                                             activation="gelu", batch_first=True)
    with warnings.catch_warnings():  # "enable_nested_tensor is True, but ..." (torch >= 2)
        warnings.simplefilter("ignore")
        model = torch.nn.TransformerEncoder(layer, p["layers"])
    x = torch.randn(p["batch"], p["seq"], h)
    return model, (x,), lambda out: out.float().pow(2).mean()


def _make_gpt_block(torch):
    nn = torch.nn
    sdpa = getattr(nn.functional, "scaled_dot_product_attention", None)

    class CausalSelfAttention(nn.Module):
        def __init__(self, hidden, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                       for y in (q, k, v))
            if sdpa is not None:
                y = sdpa(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
                att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
                y = att @ v
            return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self, hidden, heads):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
            self.attn = CausalSelfAttention(hidden, heads)
            self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                     nn.Linear(4 * hidden, hidden))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    return Block


def _build_gpt(torch, p):
    block = _make_gpt_block(torch)
    h = p["hidden"]
    model = torch.nn.Sequential(*[block(h, h // 64) for _ in range(p["layers"])],
                                torch.nn.LayerNorm(h))
    x = torch.randn(p["batch"], p["seq"], h)
    return model, (x,), lambda out: out.float().pow(2).mean()


def _mlp(torch, sizes, last_relu):
    layers = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        layers += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    return torch.nn.Sequential(*(layers if last_relu else layers[:-1]))


def _dlrm_sizes(p):
    """(bottom MLP sizes, top MLP sizes, interaction features) of the DLRM-like model."""
    n = p["tables"] + 1
    interactions = n * (n - 1) // 2
    return (p["dense"], 512, 256, p["dim"]), (p["dim"] + interactions, 512, 256, 1), n


def _build_dlrm(torch, p):
    nn = torch.nn
    bottom_sizes, top_sizes, n = _dlrm_sizes(p)

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = _mlp(torch, bottom_sizes, last_relu=True)
            self.top = _mlp(torch, top_sizes, last_relu=False)
            self.tables = nn.ModuleList(nn.EmbeddingBag(p["rows"], p["dim"], mode="sum",
                                                        sparse=True)
                                        for _ in range(p["tables"]))
            rows, cols = torch.tril_indices(n, n, offset=-1)
            self.register_buffer("rows", rows, persistent=False)
            self.register_buffer("cols", cols, persistent=False)

        def forward(self, dense, indices, offsets):
            features = [self.bottom(dense)] + [t(indices[i], offsets) for i, t in
                                               enumerate(self.tables)]
            stacked = torch.stack(features, dim=1)
            z = torch.bmm(stacked, stacked.transpose(1, 2))[:, self.rows, self.cols]
            return self.top(torch.cat([features[0], z], dim=1))

    batch, per_bag = p["batch"], p["per_bag"]
    dense = torch.randn(batch, p["dense"])
    indices = torch.randint(0, p["rows"], (p["tables"], batch * per_bag))
    offsets = torch.arange(0, batch * per_bag, per_bag)
    labels = torch.randint(0, 2, (batch, 1)).float()
    return DLRM(), (dense, indices, offsets), (
        lambda out: torch.nn.functional.binary_cross_entropy_with_logits(out.float(), labels))


BUILDERS = {"torchvision": _build_torchvision, "bert": _build_bert, "gpt": _build_gpt,
            "dlrm": _build_dlrm}


def build(torch, p, device="cpu"):
    """(model, inputs, loss) of params `p` on `device`, seeded (same weights every time)."""
    torch.manual_seed(0)
    model, inputs, loss = BUILDERS[p["kind"]](torch, p)
    if device != "cpu":
        model, inputs, loss = _to_device(torch, p, model, inputs, device)
    return model, inputs, loss


def _to_device(torch, p, model, inputs, device):
    """Move model and inputs to `device`; the loss is rebuilt there (the builders'
    closures hold CPU labels)."""
    model = model.to(device)
    inputs = tuple(x.to(device) for x in inputs)
    if p["kind"] == "torchvision":
        labels = torch.randint(0, 1000, (p["batch"],), device=device)
        return model, inputs, lambda out: torch.nn.functional.cross_entropy(out.float(), labels)
    if p["kind"] == "dlrm":
        labels = torch.randint(0, 2, (p["batch"], 1), device=device).float()
        return model, inputs, lambda out: (
            torch.nn.functional.binary_cross_entropy_with_logits(out.float(), labels))
    return model, inputs, lambda out: out.float().pow(2).mean()


def make_step(torch, p, mode, device="cpu"):
    """The zero-argument callable of one inference or training step of model `p`.

    Args:
        torch: the imported torch.
        p: model parameters (a params dict of this suite).
        mode: "infer" (eval, no_grad; bf16 autocast on CUDA when p["bf16"]) or
            "train" (train mode; zero_grad, forward, loss, backward, SGD step).
        device: "cpu" or "cuda".
    """
    model, inputs, loss = build(torch, p, device)
    if mode == "infer":
        model.eval()
        autocast = p.get("bf16") and device == "cuda"

        def infer():
            with torch.no_grad():
                if autocast:
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        model(*inputs)
                else:
                    model(*inputs)
        return infer
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def train():
        optimizer.zero_grad(set_to_none=True)
        loss(model(*inputs)).backward()
        optimizer.step()
    return train


# -- work per call --------------------------------------------------------------------

def _encoder_flops(p, causal=False):
    tokens, h, seq = p["batch"] * p["seq"], p["hidden"], p["seq"]
    dense = 2.0 * tokens * (4 * h * h + 2 * h * 4 * h)
    attention = 2.0 * 2 * tokens * seq * h
    return p["layers"] * (dense + attention)


def forward_flops(p):
    """FLOP of one forward pass of model `p` (2 x multiply-adds)."""
    if p["kind"] == "torchvision":
        return 2e9 * TORCHVISION_GMACS[p["model"]] * p["batch"] * (
            p.get("hw", IMAGE_HW) / IMAGE_HW) ** 2
    if p["kind"] in ("bert", "gpt"):
        return _encoder_flops(p)
    bottom, top, n = _dlrm_sizes(p)
    mlp = sum(a * b for sizes in (bottom, top) for a, b in zip(sizes, sizes[1:]))
    return 2.0 * p["batch"] * (mlp + n * n * p["dim"])


def _work(mode):
    return lambda p: ((3.0 if mode == "train" else 1.0) * forward_flops(p), "flop")


# -- registration ---------------------------------------------------------------------

def _setup(mode, device):
    def setup(torch, p):
        return make_step(torch, p, mode, device)
    return setup


def _tv(model, batch, **extra):
    return dict({"kind": "torchvision", "model": model, "batch": batch}, **extra)


_BERT_BASE = {"kind": "bert", "hidden": 768, "seq": 128}
_GPT_BASE = {"kind": "gpt", "hidden": 768, "seq": 128}
_DLRM_BASE = {"kind": "dlrm", "tables": 8, "rows": 100000, "dim": 64, "per_bag": 20,
              "dense": 13}

#: model -> (CPU params, CUDA params, description).  CPU: 2-core batches (CPU_BATCH_CAP);
#: CUDA: TorchBench-like batches, inference under bf16 autocast.
MODEL_TABLE = {
    "alexnet": (_tv("alexnet", 16), _tv("alexnet", 128, bf16=True),
                "torchvision alexnet (weights=None), 224x224"),
    "mobilenet_v3_large": (_tv("mobilenet_v3_large", 2),
                           _tv("mobilenet_v3_large", 64, bf16=True),
                           "torchvision mobilenet_v3_large (weights=None), 224x224"),
    "resnet50": (_tv("resnet50", 4), _tv("resnet50", 64, bf16=True),
                 "torchvision resnet50 (weights=None), 224x224"),
    "regnet_y_400mf": (_tv("regnet_y_400mf", 2), _tv("regnet_y_400mf", 64, bf16=True),
                       "torchvision regnet_y_400mf (weights=None), 224x224"),
    "bert": (dict(_BERT_BASE, layers=1, batch=4), dict(_BERT_BASE, layers=12, batch=32, bf16=True),
             "BERT-base-sized nn.TransformerEncoder (hidden 768, 12 heads, FFN 3072, seq 128)"),
    "dlrm": (dict(_DLRM_BASE, batch=256), dict(_DLRM_BASE, batch=2048, bf16=True),
             "DLRM-like: 8 EmbeddingBag(100k x 64, sparse) + MLPs, dot interaction"),
    "gpt": (dict(_GPT_BASE, layers=1, batch=2), dict(_GPT_BASE, layers=12, batch=16, bf16=True),
            "GPT-style decoder blocks (hidden 768, 12 heads, causal attention + MLP, seq 128)"),
}
#: model -> how many times its CPU batch grows past the 2-core size (registry.scaled:
#: linear in the cores, capped), so many-core nodes do not time fork-join overhead.
#: alexnet, resnet50 and BERT run TorchBench's CPU batches (16, 4, 4 x 128) everywhere:
#: smaller ones read 1.21-1.66x off them (docs/many-cores.md).  The batch is in every
#: row's params.
CPU_BATCH_CAP = {"alexnet": 1, "mobilenet_v3_large": 8, "resnet50": 1, "regnet_y_400mf": 8,
                 "bert": 1, "dlrm": 2, "gpt": 2}
#: benchmark name -> (model, mode, device), for the reports' Models table.
MODEL_ROWS = {}


def bench_name(model, mode, device="cpu"):
    """Registry name of a model row, e.g. "resnet50_infer", "resnet50_cuda_train"."""
    return "%s%s_%s" % (model, "_cuda" if device == "cuda" else "", mode)


def _register_all():
    for model, (cpu_params, cuda_params, what) in MODEL_TABLE.items():
        needs_tv = cpu_params["kind"] == "torchvision"
        for device, params in (("cpu", cpu_params), ("cuda", cuda_params)):
            if device == "cpu":
                available = _torchvision_available if needs_tv else (lambda torch, facts: None)
            else:
                available = _cuda_torchvision_available if needs_tv else cuda_unavailable
            for mode in MODES:
                name = bench_name(model, mode, device)
                register(Benchmark(
                    name=name, device=device, family="model",
                    params={MODELS: (params,), FULL: (params,)},
                    setup=_setup(mode, device), work=_work(mode), available=available,
                    description="%s, %s" % (what, "eval forward" if mode == "infer"
                                            else "one training step (SGD)"),
                    min_rounds=1,
                    budget_s=MODEL_BUDGET_S if device == "cpu" else CUDA_MODEL_BUDGET_S,
                    scale=(scaled("batch", cap=CPU_BATCH_CAP[model]) if device == "cpu"
                           else None)))
                MODEL_ROWS[name] = (model, mode, device)


_register_all()
