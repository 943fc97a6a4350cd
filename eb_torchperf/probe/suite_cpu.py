"""CPU micro-suite, named after what the TorchBench models of the EasyBuild thread stress.

Which benchmarks, and why (relative OPS of the source build vs the wheel in
https://github.com/easybuilders/easybuild/issues/931, TorchBench CPU tables in
shared/cases/torchbench): BERT-like models (hf_Bert, BERT_pytorch) fell below 1-10 %
-> GEMM, nn.Linear and a transformer encoder layer; ResNet/vision models ~40-60 %
-> 3x3 convolution; DLRM -> embedding_bag + Linear; normalisation/activation kernels
-> LayerNorm, softmax, GELU (ATen vectorised code: CPU capability); small-op models
-> dispatch cost; memory-bound kernels -> a large elementwise add.

Sizes keep one call of the slowest known build (Debian's reference-BLAS torch 1.13,
~5 GFLOP/s) under ~0.5 s, so the time-bounded runner stays fast on slow builds.  They
were chosen for the 2-core dev machine; rows that run on all cores scale with the
allowed core count (`scale`, registry.plan): a 512^2 GEMM at 16-128 threads times the
fork/join, not the kernel (issue 16).

Inputs are allocated empty and first touched by a parallel fill before the random
values are written (`_tensor`), the same way in every process: in the bias probe on the
16-core H200 host (benchmarks/bias_probe.py, 3 fresh pairs per variant) the per-pair
A/A ratios of a 16 M add spread 31.5 % with torch.randn inputs and 3.5 % with inputs
touched this way.  The values are those of torch.randn (randn is empty + normal_).
"""

import itertools

from .registry import Benchmark, inference, register, scaled

QUICK, FULL = "quick", "full"


def _cpu_has(facts, *flags):
    present = set((facts or {}).get("cpu", {}).get("flags", ()))
    return any(f in present for f in flags)


def _tensor(torch, *shape, dtype=None, random=True):
    """A tensor first touched by a parallel fill (zero_), then filled like torch.randn;
    `random=False` leaves it zero (an output buffer)."""
    t = torch.empty(*shape)
    t.zero_()
    if random:
        t.normal_()
    return t if dtype is None else t.to(dtype)


#: GEMM edge grows with the cube root of the cores (constant work per core), at most
#: 3x (1536 from 512; 1024 on 16 cores), so the 1-thread row stays bounded.
_GEMM_SCALE = scaled("n", power=1 / 3, cap=3.0, multiple=64)


def _bf16_available(torch, facts):
    if not _cpu_has(facts, "avx512_bf16", "amx_bf16", "bf16"):
        return "CPU has no native bf16 (avx512_bf16 / amx_bf16 / SVE bf16)"
    return None


# -- GEMM ---------------------------------------------------------------------------

def _setup_matmul(torch, p):
    dtype = getattr(torch, p.get("dtype", "float32"))
    a = _tensor(torch, p["n"], p["n"], dtype=dtype)
    b = _tensor(torch, p["n"], p["n"], dtype=dtype)
    out = _tensor(torch, p["n"], p["n"], dtype=dtype, random=False)
    return lambda: torch.mm(a, b, out=out)


def _matmul_work(p):
    return 2.0 * p["n"] ** 3, "flop"


register(Benchmark(
    name="matmul_fp32", device="cpu", family="gemm",
    stresses=("blas", "intra_op_threads"),
    params={QUICK: ({"n": 512},), FULL: ({"n": 512}, {"n": 1024})},
    setup=_setup_matmul, work=_matmul_work, scale=_GEMM_SCALE,
    description="square fp32 GEMM (torch.mm): BLAS / MKL sgemm"))

register(Benchmark(
    name="matmul_bf16", device="cpu", family="gemm",
    stresses=("onednn",),
    params={QUICK: ({"n": 512, "dtype": "bfloat16"},),
            FULL: ({"n": 1024, "dtype": "bfloat16"},)},
    setup=_setup_matmul, work=_matmul_work, available=_bf16_available, scale=_GEMM_SCALE,
    description="square bf16 GEMM (torch.mm): oneDNN / MKL bf16 kernels"))

register(Benchmark(
    name="thread_scaling", device="cpu", family="threads",
    stresses=("blas",),
    params={QUICK: ({"n": 512, "threads": 1}, {"n": 512, "threads": "all"}),
            FULL: ({"n": 1024, "threads": 1}, {"n": 1024, "threads": "all"})},
    setup=_setup_matmul, work=_matmul_work, scale=_GEMM_SCALE,
    description="fp32 GEMM at 1 thread and at all allowed cores (scaling = ratio)"))


# -- nn.Linear ------------------------------------------------------------------------

def _setup_linear(torch, p):
    layer = torch.nn.Linear(p["in"], p["out"])
    x = _tensor(torch, p["tokens"], p["in"])
    return inference(torch, layer, x)


register(Benchmark(
    name="linear", device="cpu", family="gemm",
    stresses=("blas", "intra_op_threads"),
    params={QUICK: ({"tokens": 256, "in": 1024, "out": 1024},),
            FULL: ({"tokens": 256, "in": 1024, "out": 1024},
                   {"tokens": 2048, "in": 1024, "out": 4096})},
    setup=_setup_linear, scale=scaled("tokens", cap=8.0),
    work=lambda p: (2.0 * p["tokens"] * p["in"] * p["out"], "flop"),
    description="nn.Linear forward (addmm): BLAS"))


# -- convolution ----------------------------------------------------------------------

def _setup_conv(torch, p):
    conv = torch.nn.Conv2d(p["channels"], p["channels"], 3, padding=1, bias=False)
    x = _tensor(torch, p["batch"], p["channels"], p["hw"], p["hw"])
    return inference(torch, conv, x)


register(Benchmark(
    name="conv3x3", device="cpu", family="conv",
    stresses=("onednn", "intra_op_threads"), records_kernels=True,
    params={QUICK: ({"batch": 4, "channels": 64, "hw": 56},),
            FULL: ({"batch": 16, "channels": 64, "hw": 56},
                   {"batch": 16, "channels": 256, "hw": 14})},
    setup=_setup_conv, scale=scaled("batch", cap=8.0),
    work=lambda p: (2.0 * p["batch"] * p["channels"] ** 2 * 9 * p["hw"] ** 2, "flop"),
    description="ResNet-like 3x3 Conv2d forward: oneDNN / NNPACK / thnn"))


# -- transformer encoder layer --------------------------------------------------------

def _encoder_flops(p):
    tokens, h, ffn, seq = p["batch"] * p["seq"], p["hidden"], 4 * p["hidden"], p["seq"]
    dense = 2.0 * tokens * (4 * h * h + 2 * h * ffn)
    attention = 2.0 * 2 * tokens * seq * h
    return dense + attention


def _make_encoder(torch, p):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        p["hidden"], p["hidden"] // 64, 4 * p["hidden"], dropout=0.0, batch_first=True)
    x = torch.randn(p["batch"], p["seq"], p["hidden"])
    return layer, x


def _setup_bert_infer(torch, p):
    layer, x = _make_encoder(torch, p)
    layer.eval()
    return inference(torch, layer, x)


def _setup_bert_train(torch, p):
    layer, x = _make_encoder(torch, p)
    layer.train()

    def call():
        layer.zero_grad(set_to_none=True)
        layer(x).sum().backward()
    return call


_BERT = {QUICK: ({"batch": 1, "seq": 64, "hidden": 768},),
         FULL: ({"batch": 1, "seq": 128, "hidden": 768}, {"batch": 8, "seq": 128, "hidden": 768})}

register(Benchmark(
    name="bert_layer_infer", device="cpu", family="transformer",
    stresses=("blas", "intra_op_threads"),
    params=_BERT, setup=_setup_bert_infer, work=lambda p: (_encoder_flops(p), "flop"),
    scale=scaled("batch", cap=8.0),
    description="BERT-base-like TransformerEncoderLayer, eval forward"))

register(Benchmark(
    name="bert_layer_train", device="cpu", family="transformer",
    stresses=("blas", "intra_op_threads"),
    params=_BERT, setup=_setup_bert_train, work=lambda p: (3 * _encoder_flops(p), "flop"),
    scale=scaled("batch", cap=8.0),
    description="BERT-base-like TransformerEncoderLayer, forward + backward"))


# -- normalisation / activation (memory-bound, vectorised ATen kernels) ---------------

def _setup_unary(op_name):
    def setup(torch, p):
        x = _tensor(torch, p["rows"], p["cols"])
        if op_name == "layer_norm":
            norm = torch.nn.LayerNorm(p["cols"])
            return lambda: norm(x).detach()
        if op_name == "softmax":
            return lambda: torch.softmax(x, dim=-1)
        return lambda: torch.nn.functional.gelu(x)
    return setup


def _unary_bytes(p):
    return 2.0 * 4 * p["rows"] * p["cols"], "byte"


for _name, _shape, _what in (("layernorm", (8192, 768), "LayerNorm over hidden 768"),
                             ("softmax", (8192, 512), "softmax over the last dim"),
                             ("gelu", (4096, 3072), "GELU on the FFN activation")):
    register(Benchmark(
        name=_name, device="cpu", family="vectorised",
        stresses=("aten_vectorised", "memory_bound", "intra_op_threads"),
        params={QUICK: ({"rows": _shape[0], "cols": _shape[1]},),
                FULL: ({"rows": _shape[0], "cols": _shape[1]},)},
        setup=_setup_unary("layer_norm" if _name == "layernorm" else _name),
        work=_unary_bytes,
        description=_what + " (fp32; bytes read + written): ATen vectorised kernels"))


# -- embedding_bag (DLRM-like) --------------------------------------------------------

#: Bytes the quick row's gathers should span at least: ~4x a 32-64 MB L3 (issue 16).
#: On the 2-core dev VM one 51 MB table made the A/A pair ratio wander by allocation
#: (sd of the log pair ratio 24.8 % over 8 fresh pairs, one pair at 52 %; one process's
#: tables ran 0.31-0.66 ms by allocation, benchmarks/placement_probe.py): the gathers hit
#: wherever that table's pages landed in the cache and the host's memory.  Four tables
#: used in turn gave 2.7 % (the same test: 8 fresh pairs, 8 rounds of 15 ms blocks, idle VM).
EMBEDDING_SPAN_BYTES = 192 * 2 ** 20


def embedding_tables(rows: int, dim: int) -> int:
    """Copies of a rows x dim fp32 table for the gathers to span EMBEDDING_SPAN_BYTES."""
    return max(1, -(-EMBEDDING_SPAN_BYTES // (4 * rows * dim)))


def _setup_embedding_bag(torch, p):
    """`tables` copies of one EmbeddingBag (same weights' shape, own memory), called in
    turn: one call gathers bags x per_bag rows of dim fp32 from one table."""
    torch.manual_seed(0)
    bags = [torch.nn.EmbeddingBag(p["rows"], p["dim"], mode="sum")
            for _ in range(p.get("tables", 1))]
    indices = torch.randint(0, p["rows"], (p["bags"] * p["per_bag"],))
    offsets = torch.arange(0, p["bags"] * p["per_bag"], p["per_bag"])
    turn = itertools.cycle(bags)

    def call():
        with torch.no_grad():
            next(turn)(indices, offsets)
    return call


_EMB_QUICK = {"rows": 200000, "dim": 64, "bags": 4096, "per_bag": 20}
_EMB_FULL = {"rows": 1000000, "dim": 128, "bags": 8192, "per_bag": 40}
register(Benchmark(
    name="embedding_bag", device="cpu", family="embedding",
    stresses=("memory_bound", "intra_op_threads"),
    params={QUICK: (dict(_EMB_QUICK, tables=embedding_tables(200000, 64)),),
            FULL: (dict(_EMB_FULL, tables=embedding_tables(1000000, 128)),)},
    setup=_setup_embedding_bag,
    work=lambda p: (4.0 * p["dim"] * p["bags"] * p["per_bag"], "byte"),
    description="DLRM-like EmbeddingBag(sum) forward over `tables` tables used in turn "
                "(bytes gathered): ATen / FBGEMM"))


# -- memory bandwidth and dispatch ----------------------------------------------------

def _setup_add(torch, p):
    a, b = _tensor(torch, p["numel"]), _tensor(torch, p["numel"])
    out = _tensor(torch, p["numel"], random=False)
    return lambda: torch.add(a, b, out=out)


register(Benchmark(
    name="add_bandwidth", device="cpu", family="memory",
    stresses=("memory_bound", "intra_op_threads"),
    params={QUICK: ({"numel": 1 << 24},), FULL: ({"numel": 1 << 25},)},
    setup=_setup_add, work=lambda p: (3.0 * 4 * p["numel"], "byte"),
    description="elementwise add over a large fp32 tensor (bytes read + written)"))


def _setup_dispatch(torch, p):
    a, b = torch.ones(1), torch.ones(1)
    return lambda: torch.add(a, b)


register(Benchmark(
    name="dispatch", device="cpu", family="overhead",
    params={QUICK: ({"numel": 1},), FULL: ({"numel": 1},)}, one_thread=True,
    setup=_setup_dispatch, work=lambda p: (1.0, "op"),
    description="1-element torch.add: Python + dispatcher cost per op"))


# -- denormal inputs ------------------------------------------------------------------

def _setup_denormal(torch, p):
    # 1e-39 is below float32's smallest normal (1.18e-38): inputs and results are
    # denormal.  Cache-resident size, so the time is the arithmetic, not memory.
    value = 1e-39 if p["values"] == "denormal" else 1.0
    x, y = torch.full((p["numel"],), value), torch.full((p["numel"],), 0.5)
    out = torch.empty(p["numel"])
    return lambda: torch.addcmul(x, x, y, out=out)


_DENORMAL = ({"numel": 16384, "values": "normal"}, {"numel": 16384, "values": "denormal"})

register(Benchmark(
    name="denormal", device="cpu", family="denormal",
    params={QUICK: _DENORMAL, FULL: _DENORMAL}, one_thread=True,
    setup=_setup_denormal, work=lambda p: (3.0 * 4 * p["numel"], "byte"),
    description="addcmul on normal vs denormal fp32 inputs (flush-denormal off)"))
