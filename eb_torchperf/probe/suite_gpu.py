"""GPU micro-suite: compute, memory, launch and CPU-dispatch overhead on one CUDA device.

Why these (https://github.com/easybuilders/easybuild/issues/931, GPU TorchBench tables
in shared/cases/torchbench): on GPU the source build and the wheels ran within ~3 % of
each other, because both call the same cuBLAS/cuDNN kernels.  What differs between
installations is what surrounds the kernels: the CPU cost of issuing work
(nn.Linear bf16, hidden 2048, 8192 tokens: 13.5 µs CPU per call on an H100 DGX host,
33-37 µs on Grace, https://github.com/NVIDIA/TransformerEngine/issues/2053), launch
latency, run-time settings (CUDA_LAUNCH_BLOCKING, the caching allocator), host-device
copies, and which kernels a build ships (arch list, cuDNN, flash attention).  So:
GEMM at four precisions (the ceiling), nn.Linear forward and forward+backward with
CPU and GPU µs per call (cuda_timing.DispatchTimer), a tiny op (launch latency),
copies, attention with the backend the probe reports, a cuDNN convolution, and with
two or more GPUs an NCCL all-reduce with one process per GPU (probe/collective.py).

Sizes: each call runs for 0.05-20 ms on an H200 (788 TFLOP/s bf16, 4.3 TB/s copy),
well past launch overhead, with data several times the 60 MB L2.  The quick suite
keeps five entries (GEMM bf16, Linear forward, launch, pinned H2D, D2D): on the H200
each took ~1.4 s per worker pair, the GEMM ~3-6 s with cuBLAS's start-up, while
attention and convolution cost ~3 s more per worker for cuDNN's first call, so they
run in `full` only.
"""

import contextlib

from .cuda_timing import DispatchTimer
from .gpu_facts import SDPA_SHAPE
from .registry import Benchmark, inference, register

QUICK, FULL = "quick", "full"
#: Suite dtype names -> (torch dtype attribute, TF32 switched on for float32 matmuls).
#: Only the tf32 rows switch it on (they measure the TF32 rate on purpose); every other
#: row, fp32 included, runs in the interpreter's own math mode, read and never set: a
#: module, site profile or variable that turns TF32 on (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE)
#: or off (NVIDIA_TF32_OVERRIDE=0) changes the rows' speed and numerics as it changes
#: a user's job (issue 30).
DTYPES = {"bf16": ("bfloat16", False), "fp16": ("float16", False),
          "tf32": ("float32", True), "fp32": ("float32", False)}
MIB = 1 << 20


def cuda_unavailable(torch, facts):
    """Availability of every CUDA benchmark: the probe's gpu facts, no CUDA call."""
    gpu = (facts or {}).get("gpu") or {}
    if not gpu.get("available"):
        return "no GPU: %s" % gpu.get("reason", "torch.cuda.is_available() is False")
    return None


def _dtype(torch, name):
    return getattr(torch, DTYPES[name][0])


@contextlib.contextmanager
def row_math_mode(torch, name):
    """The math mode of a row of dtype `name` (a DTYPES key; any other leaves it as is):
    a tf32 row allows TF32 for cuBLAS matmuls where the process does not already, and
    turns it off again after; every other row computes in the process's own mode,
    untouched.  The timed calls (_in_row_mode) and the row's numerics check
    (numerics_more.for_row) both run inside it."""
    matmul = torch.backends.cuda.matmul
    if not DTYPES.get(name, (None, False))[1] or matmul.allow_tf32:  # reads only a tf32 row's
        yield
        return
    matmul.allow_tf32 = True
    try:
        yield
    finally:
        matmul.allow_tf32 = False


def _in_row_mode(torch, name, fn):
    """`fn` itself for a row in the process's own math mode, else `fn` in row_math_mode."""
    if not DTYPES[name][1]:
        return fn

    def call():
        with row_math_mode(torch, name):
            fn()
    return call


# -- GEMM -----------------------------------------------------------------------------

def _setup_gemm(torch, p):
    torch.manual_seed(0)
    dtype = _dtype(torch, p["dtype"])
    a = torch.randn(p["m"], p["k"], device="cuda", dtype=dtype)
    b = torch.randn(p["k"], p["n"], device="cuda", dtype=dtype)
    out = torch.empty(p["m"], p["n"], device="cuda", dtype=dtype)
    return _in_row_mode(torch, p["dtype"], lambda: torch.mm(a, b, out=out))


def _gemm(dtype, m, n, k):
    return {"dtype": dtype, "m": m, "n": n, "k": k}


#: Square 8192^3 (the ceiling) and a transformer MLP up-projection: 8192 tokens,
#: hidden 4096 -> 16384.
_GEMM_FULL = tuple(_gemm(d, 8192, 8192, 8192) for d in DTYPES) + tuple(
    _gemm(d, 8192, 16384, 4096) for d in DTYPES)

register(Benchmark(
    name="gemm_cuda", device="cuda", family="gemm",
    params={QUICK: (_gemm("bf16", 8192, 8192, 8192), _gemm("tf32", 8192, 8192, 8192)),
            FULL: _GEMM_FULL},
    setup=_setup_gemm, work=lambda p: (2.0 * p["m"] * p["n"] * p["k"], "flop"),
    available=cuda_unavailable,
    description="torch.mm on random data (cuBLAS/cuBLASLt); fp32 in the process's own "
                "math mode, tf32 = fp32 with TF32 allowed"))


# -- nn.Linear: CPU vs GPU time per call -----------------------------------------------

def _make_linear(torch, p):
    torch.manual_seed(0)
    dtype = _dtype(torch, p["dtype"])
    layer = torch.nn.Linear(p["in"], p["out"], device="cuda", dtype=dtype)
    x = torch.randn(p["tokens"], p["in"], device="cuda", dtype=dtype)
    return layer, x


def _setup_linear_fwd(torch, p):
    layer, x = _make_linear(torch, p)
    return DispatchTimer(torch, inference(torch, layer, x))


def _setup_linear_train(torch, p):
    layer, x = _make_linear(torch, p)
    x.requires_grad_(True)
    grad = torch.ones(p["tokens"], p["out"], device="cuda", dtype=x.dtype)

    def call():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        layer(x).backward(grad)
    return DispatchTimer(torch, call)


def _linear(tokens, width_in, width_out, dtype="bf16"):
    return {"dtype": dtype, "tokens": tokens, "in": width_in, "out": width_out}


#: The published shape (bf16, hidden 2048, 8192 tokens), a launch-bound one, a large one.
_LINEAR = {QUICK: (_linear(8192, 2048, 2048),),
           FULL: (_linear(8192, 2048, 2048), _linear(1024, 1024, 1024),
                  _linear(8192, 4096, 4096))}

#: Floor on one sample of the CPU-bound GPU rows (a small training-step Linear, a
#: launch with sync take 10-100 µs a call): at the audit's 2 ms a sample was a few
#: dozen calls and one scheduler hiccup of the host moved it; 20 ms is some hundreds
#: (issue 16: 6 of 27 full-suite GPU rows were "significant" against themselves).
CPU_BOUND_MIN_SAMPLE_S = 0.02

register(Benchmark(
    name="linear_cuda_fwd", device="cuda", family="dispatch",
    params=_LINEAR, setup=_setup_linear_fwd,
    work=lambda p: (2.0 * p["tokens"] * p["in"] * p["out"], "flop"),
    available=cuda_unavailable, min_sample_s=CPU_BOUND_MIN_SAMPLE_S,
    description="nn.Linear forward (no_grad); extra: CPU and GPU µs per call"))

register(Benchmark(
    name="linear_cuda_train", device="cuda", family="dispatch",
    params={FULL: _LINEAR[FULL]}, setup=_setup_linear_train,
    work=lambda p: (6.0 * p["tokens"] * p["in"] * p["out"], "flop"),
    available=cuda_unavailable, min_sample_s=CPU_BOUND_MIN_SAMPLE_S,
    description="nn.Linear forward + backward (input and weight grads); extra: CPU/GPU µs"))


# -- launch latency ---------------------------------------------------------------------

def _setup_launch(torch, p):
    a, b = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    if p["sync"]:
        def call():
            torch.add(a, b)
            torch.cuda.synchronize()
        return call
    return DispatchTimer(torch, lambda: torch.add(a, b))


register(Benchmark(
    name="launch_cuda", device="cuda", family="overhead",
    params={QUICK: ({"sync": False},), FULL: ({"sync": False}, {"sync": True})},
    setup=_setup_launch, work=lambda p: (1.0, "op"), available=cuda_unavailable,
    min_sample_s=CPU_BOUND_MIN_SAMPLE_S,
    description="1-element torch.add on cuda (allocates its output): issue cost per op; "
                "sync=True adds torch.cuda.synchronize (round-trip latency)"))


# -- copies -------------------------------------------------------------------------------

def _setup_copy(torch, p):
    numel = p["mib"] * MIB
    device = torch.empty(numel, dtype=torch.uint8, device="cuda")
    host = torch.empty(numel, dtype=torch.uint8, pin_memory=p["memory"] == "pinned")
    host.fill_(1)
    asynchronous = p["memory"] == "pinned"
    if p["direction"] == "h2d":
        return lambda: device.copy_(host, non_blocking=asynchronous)
    return lambda: host.copy_(device, non_blocking=asynchronous)


#: 64 MiB: pinned H2D reaches 55 GB/s at 16 MiB already on the H200, while pinning
#: 256 MiB took ~15 s in its VM (measured, issue 4).
def _copy(direction, memory, mib=64):
    return {"direction": direction, "memory": memory, "mib": mib}


register(Benchmark(
    name="copy_host_device", device="cuda", family="memory",
    params={QUICK: (_copy("h2d", "pinned"),),
            FULL: (_copy("h2d", "pinned"), _copy("h2d", "pageable"),
                   _copy("d2h", "pinned"), _copy("d2h", "pageable"))},
    setup=_setup_copy, work=lambda p: (float(p["mib"] * MIB), "byte"),
    available=cuda_unavailable,
    description="Tensor.copy_ between host and device (bytes moved); pinned = "
                "page-locked host memory, non_blocking"))


def _setup_d2d(torch, p):
    src = torch.ones(p["mib"] * MIB, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


register(Benchmark(
    name="copy_d2d", device="cuda", family="memory",
    params={QUICK: ({"mib": 1024},), FULL: ({"mib": 1024},)},
    setup=_setup_d2d, work=lambda p: (2.0 * p["mib"] * MIB, "byte"),
    available=cuda_unavailable,
    description="device-to-device Tensor.copy_ (bytes read + written)"))


# -- attention ----------------------------------------------------------------------------

def _sdpa_unavailable(torch, facts):
    reason = cuda_unavailable(torch, facts)
    if reason is None and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        reason = "torch %s has no scaled_dot_product_attention (added in 2.0)" % torch.__version__
    return reason


def _setup_sdpa(torch, p):
    torch.manual_seed(0)
    shape = (p["batch"], p["heads"], p["seq"], p["head_dim"])
    q, k, v = (torch.randn(shape, device="cuda", dtype=_dtype(torch, p["dtype"]))
               for _ in range(3))
    attention = torch.nn.functional.scaled_dot_product_attention
    if p["backend"] == "default":
        return DispatchTimer(torch, lambda: attention(q, k, v))
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH,
               "efficient": SDPBackend.EFFICIENT_ATTENTION}[p["backend"]]

    def call():
        with sdpa_kernel(backend):
            attention(q, k, v)
    return DispatchTimer(torch, call)


def _sdpa(backend):
    batch, heads, seq, head_dim = SDPA_SHAPE
    return {"dtype": "bf16", "batch": batch, "heads": heads, "seq": seq,
            "head_dim": head_dim, "backend": backend}


register(Benchmark(
    name="sdpa_cuda", device="cuda", family="attention",
    params={QUICK: (_sdpa("default"),),
            FULL: tuple(_sdpa(b) for b in ("default", "flash", "efficient", "math"))},
    setup=_setup_sdpa, available=_sdpa_unavailable,
    work=lambda p: (4.0 * p["batch"] * p["heads"] * p["seq"] ** 2 * p["head_dim"], "flop"),
    description="scaled_dot_product_attention forward, non-causal; default = the backend "
                "torch chooses (facts gpu.sdpa.backend), else forced with sdpa_kernel"))


# -- convolution ---------------------------------------------------------------------------

def _setup_conv(torch, p):
    torch.manual_seed(0)
    dtype = _dtype(torch, p["dtype"])
    conv = torch.nn.Conv2d(p["channels"], p["channels"], 3, padding=1, bias=False)
    conv = conv.to(device="cuda", dtype=dtype, memory_format=torch.channels_last)
    x = torch.randn(p["batch"], p["channels"], p["hw"], p["hw"], device="cuda", dtype=dtype)
    x = x.to(memory_format=torch.channels_last)
    return DispatchTimer(torch, inference(torch, conv, x))


def _conv(dtype):
    return {"dtype": dtype, "batch": 64, "channels": 256, "hw": 28}


register(Benchmark(
    name="conv_cuda", device="cuda", family="conv",
    params={QUICK: (_conv("fp32"),), FULL: (_conv("bf16"), _conv("fp32"))},
    setup=_setup_conv, available=cuda_unavailable,
    work=lambda p: (2.0 * p["batch"] * p["channels"] ** 2 * 9 * p["hw"] ** 2, "flop"),
    description="ResNet-like 3x3 Conv2d forward, channels_last (cuDNN; fp32 in the "
                "process's own math mode: torch's default allows TF32)"))


# -- NCCL all-reduce (two or more GPUs) ------------------------------------------------------

def _allreduce_unavailable(torch, facts, gpus):
    reason = cuda_unavailable(torch, facts)
    count = len(((facts or {}).get("gpu") or {}).get("devices") or ())
    if reason is None and count < gpus:
        reason = "NCCL all-reduce over %d GPUs needs %d GPUs (this machine shows %d)" % (
            gpus, gpus, count)
    dist = getattr(torch, "distributed", None)
    if reason is None and not (dist and dist.is_available() and dist.is_nccl_available()):
        reason = "this torch has no NCCL backend in torch.distributed"
    return reason


def _setup_allreduce(torch, p):
    """One process per GPU: the worker is rank 0, peers are ranks 1..gpus-1."""
    from .collective import AllReduceGroup
    return AllReduceGroup(torch, p["gpus"], p["mib"] * MIB // 4, backend="nccl")


def _bus_bytes(p):
    """nccl-tests' bus bandwidth: bytes x 2(n-1)/n, comparable across GPU counts
    (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)."""
    n = p["gpus"]
    return float(p["mib"] * MIB) * 2 * (n - 1) / n, "byte"


#: 2, 4 and 8 GPUs (the node sizes sites run); sizes past the machine's GPU count are
#: skipped with the reason.  256 MiB per rank: nccl-tests' bus bandwidth has levelled
#: off there (H200 pair: 289 GB/s).  Samples of at least 20 ms: the peers start each
#: sample tens of µs after rank 0 (pipe wake-up), which with the audit's 2 ms samples
#: (2 calls of ~0.93 ms) cost 7 % (H200 pair: 260 vs 280 GB/s between two worker pairs).
ALLREDUCE_MIN_SAMPLE_S = 0.02
for _gpus in (2, 4, 8):
    register(Benchmark(
        name="allreduce_nccl" if _gpus == 2 else "allreduce_nccl_%dgpu" % _gpus,
        device="cuda", family="communication",
        params={FULL: ({"mib": 256, "gpus": _gpus},)},
        setup=_setup_allreduce, work=_bus_bytes, min_sample_s=ALLREDUCE_MIN_SAMPLE_S,
        available=lambda torch, facts, _n=_gpus: _allreduce_unavailable(torch, facts, _n),
        description="NCCL all-reduce (sum, fp32, 256 MiB per rank) over %d GPUs, one "
                    "process per GPU (torch.distributed); rate = bus bandwidth" % _gpus))
