"""GPU facts of the target torch: device, architectures, library versions, settings.

`collect_gpu(torch)` is the probe's "gpu" collector.  It makes no CUDA call unless
`torch.cuda.is_available()` says a device is there, so a CPU-only machine or a CPU
build never initialises CUDA.  Every field degrades to None when the API is missing
(torch 1.13 lacks some of them).  The pure helpers `arch_support` and
`cudnn_compatible` are shared with the host-side GPU rules.
"""

import ctypes
import os
import re
import time

#: Environment variables that change how PyTorch uses the GPU.  Sources:
#: https://pytorch.org/docs/stable/notes/cuda.html (memory management, allocator
#: settings, asynchronous execution) and
#: https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables
GPU_ENV_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
                "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING", "CUDA_VISIBLE_DEVICES")
#: Shape (batch, heads, sequence, head dim) and dtype of the attention whose backend
#: the probe reports; the suite's `sdpa_cuda` benchmark uses the same shape.
SDPA_SHAPE = (4, 16, 4096, 128)
SDPA_DTYPE = "bfloat16"
#: Index returned by torch._fused_sdp_choice -> backend name (the values of
#: torch.nn.attention.SDPBackend / aten's sdp::SDPBackend enum, seen identical in torch
#: 2.11: ERROR -1, MATH 0, FLASH_ATTENTION 1, EFFICIENT_ATTENTION 2, CUDNN_ATTENTION 3).
SDPA_BACKENDS = {-1: "none", 0: "math", 1: "flash", 2: "efficient", 3: "cudnn",
                 4: "overrideable"}
_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")


def _parse_capability(capability):
    major, _, minor = str(capability).partition(".")
    return int(major), int(minor or 0)


def arch_support(arch_list, capability):
    """How a torch built for `arch_list` runs kernels on a device of `capability`.

    Rules (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility",
    https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility):
    machine code sm_XY runs on devices X.Z with Z >= Y (same major); "a"-suffixed code
    (sm_90a) only on X.Y itself; PTX compute_XY is compiled by the driver at load time
    for any device >= X.Y.

    Args:
        arch_list: `torch.cuda.get_arch_list()`, e.g. ["sm_80", "sm_90", "compute_90"].
        capability: "9.0" (major.minor).

    Returns:
        "native" (sm_XY for this exact device), "compatible" (machine code of an
        older minor of the same major), "ptx" (only PTX: JIT-compiled at start-up,
        slow first call and possibly slower kernels) or "missing" (no kernel can run).
    """
    major, minor = _parse_capability(capability)
    found = set()
    for arch in arch_list or ():
        match = _ARCH.match(arch)
        if not match:
            continue
        kind, a_major, a_minor, suffix = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if kind == "sm" and (a_major, a_minor) == (major, minor):
            found.add("native")
        elif kind == "sm" and a_major == major and a_minor < minor and suffix != "a":
            found.add("compatible")
        elif kind == "compute" and (a_major, a_minor) <= (major, minor):
            found.add("ptx")
    for status in ("native", "compatible", "ptx"):
        if status in found:
            return status
    return "missing"


def cudnn_compatible(runtime, build):
    """Whether cuDNN `runtime` (major, minor, patch) can serve a torch built with `build`.

    The rule PyTorch itself applies (torch/backends/cudnn/__init__.py, `_init`): the
    majors must match; from cuDNN 7 on a newer runtime minor is fine, an older one is not.
    """
    if runtime[0] != build[0]:
        return False
    if runtime[0] < 7:
        return runtime[1] == build[1]
    return runtime[1] >= build[1]


def _version_text(value, base=1000):
    """13000 -> "13.0" (CUDA's int encoding: 1000 * major + 10 * minor)."""
    if not value:
        return None
    return "%d.%d" % (value // base, (value % base) // 10)


def _c_version(library, symbol):
    try:
        lib = ctypes.CDLL(library)
        out = ctypes.c_int()
        if getattr(lib, symbol)(ctypes.byref(out)) == 0:
            return out.value
    except (OSError, AttributeError):
        pass
    return None


def _mapped(pattern):
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if re.search(pattern, os.path.basename(path)):
                    return path
    except OSError:
        pass
    return None


def cuda_versions(torch):
    """CUDA build, runtime and driver versions ("13.0" strings, None if unknown).

    Sources: torch.version.cuda (build); cudaRuntimeGetVersion of the libcudart mapped
    into this process (None when torch links it statically); cuDriverGetVersion of
    libcuda.so.1 (the driver's highest supported CUDA version).
    """
    cudart = _mapped(r"^libcudart\.so")
    return {"build": getattr(torch.version, "cuda", None),
            "runtime": _version_text(cudart and _c_version(cudart, "cudaRuntimeGetVersion")),
            "runtime_library": cudart,
            "driver": _version_text(_c_version("libcuda.so.1", "cuDriverGetVersion"))}


def cudnn_versions(torch):
    """cuDNN runtime and build versions as [major, minor, patch], and compatibility.

    Sources: torch._C._cudnn.getRuntimeVersion / getCompileVersion (called directly:
    torch.backends.cudnn.version() raises on a mismatch instead of reporting it).
    """
    cudnn = getattr(torch._C, "_cudnn", None)
    if cudnn is None or not hasattr(cudnn, "getCompileVersion"):
        return {"available": False, "runtime": None, "build": None, "compatible": None}
    runtime, build = list(cudnn.getRuntimeVersion()), list(cudnn.getCompileVersion())
    return {"available": True, "runtime": runtime, "build": build,
            "compatible": cudnn_compatible(runtime, build)}


def _nccl_version(torch):
    nccl = getattr(torch.cuda, "nccl", None)
    if nccl is None or not hasattr(torch._C, "_nccl_version"):
        return None
    version = nccl.version()
    return ".".join(str(v) for v in version) if isinstance(version, tuple) else str(version)


def first_cuda_call_s(torch):
    """Seconds taken by the process's first CUDA work (context creation, module
    loading, first allocation and kernel); None when CUDA was already initialised."""
    if torch.cuda.is_initialized():
        return None
    start = time.perf_counter()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    return time.perf_counter() - start


def sdpa_backend(torch, shape=SDPA_SHAPE, dtype=SDPA_DTYPE):
    """Backend `scaled_dot_product_attention` runs for `shape`/`dtype` on cuda.

    Asks `torch._fused_sdp_choice(q, k, v)`, the selection function SDPA itself calls,
    so no kernel runs (running one under torch.profiler gave the same answers on the
    H200 but took 3.6 s: the first cuDNN attention builds its graph).  Returns None
    when this torch has no SDPA (< 2.0), "unknown" for an index not in SDPA_BACKENDS.
    """
    choose = getattr(torch, "_fused_sdp_choice", None)
    if choose is None:
        return None
    q, k, v = (torch.empty(shape, device="cuda", dtype=getattr(torch, dtype)) for _ in range(3))
    return SDPA_BACKENDS.get(int(choose(q, k, v)), "unknown")


def _device(torch, index, arch_list):
    props = torch.cuda.get_device_properties(index)
    capability = "%d.%d" % (props.major, props.minor)
    return {"name": props.name, "capability": capability, "memory_bytes": props.total_memory,
            "multiprocessors": props.multi_processor_count,
            "arch_support": arch_support(arch_list, capability)}


def collect_gpu(torch):
    """CUDA devices, architectures, versions and GPU settings of this torch.

    Returns:
        {"available": False, "reason", "devices": [], "env"} without a usable device;
        else also "arch_list", "cuda" (cuda_versions), "cudnn" (cudnn_versions),
        "nccl", "allocator_backend", "first_call_s", "sdpa" ({shape, dtype, backend}),
        and per device {name, capability, memory_bytes, multiprocessors, arch_support}.
    """
    env = {name: os.environ.get(name) for name in GPU_ENV_VARS}
    if not getattr(torch.version, "cuda", None):
        return {"available": False, "reason": "this torch is built without CUDA",
                "devices": [], "env": env}
    if not torch.cuda.is_available():
        return {"available": False, "reason": "no CUDA device is visible (driver, "
                "CUDA_VISIBLE_DEVICES)", "devices": [], "env": env}
    first_call = first_cuda_call_s(torch)
    arch_list = torch.cuda.get_arch_list()
    memory = torch.cuda.memory
    return {
        "available": True, "env": env, "arch_list": arch_list,
        "devices": [_device(torch, i, arch_list) for i in range(torch.cuda.device_count())],
        "first_call_s": first_call, "cuda": cuda_versions(torch), "cudnn": cudnn_versions(torch),
        "nccl": _nccl_version(torch),
        "allocator_backend": (memory.get_allocator_backend()
                              if hasattr(memory, "get_allocator_backend") else None),
        "sdpa": {"shape": list(SDPA_SHAPE), "dtype": SDPA_DTYPE, "backend": sdpa_backend(torch)},
    }
