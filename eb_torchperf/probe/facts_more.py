"""More collectors: kernel and process settings, torch math settings, libraries, compile.

Same contract as facts.py: each takes the imported torch and returns JSON values; a
field that cannot be read is None.  These exist so that the two sides of an audit
can be compared fact by fact (eb_torchperf.differences) even where no rule knows
the fact yet.  Stdlib only.
"""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from .nocwd import code_argv

#: Per-process limits recorded (resource.RLIMIT_<name>).
RLIMITS = ("NOFILE", "STACK", "MEMLOCK", "AS", "DATA", "NPROC", "CPU")
#: Transparent huge pages settings (Linux), see
#: https://www.kernel.org/doc/html/latest/admin-guide/mm/transhuge.html
THP_DIR = "/sys/kernel/mm/transparent_hugepage"
#: Environment variable that turns on a real torch.compile smoke test (it takes
#: 5-60 s: inductor compiles C++ or Triton code); without it only the prerequisites
#: are looked up, which costs milliseconds.
SMOKE_COMPILE_VAR = "EBTP_SMOKE_COMPILE"
SMOKE_COMPILE_TIMEOUT_S = 120.0
_SMOKE = ("import torch\n"
          "dev = 'cuda' if %r and torch.cuda.is_available() else 'cpu'\n"
          "f = torch.compile(lambda x: (x * 2 + 1).relu().sum())\n"
          "print(float(f(torch.ones(64, device=dev))))\n")
_SO_NAME = re.compile(r"^(?P<stem>lib[\w+-]*?)(?:-[0-9a-f]{8})*\.so(?:\.(?P<version>[\d.]+))?$")


def read_text(path):
    """A small system file's text, stripped; None when it cannot be read."""
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def _selected(text):
    """The bracketed choice of a sysfs setting ("always [madvise] never" -> "madvise")."""
    if text is None:
        return None
    match = re.search(r"\[(\w+)\]", text)
    return match.group(1) if match else text


def parse_cpulist(text):
    """CPU list "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11] (None for None)."""
    if text is None:
        return None
    cpus = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.extend(range(int(low), int(high or low) + 1))
    return cpus


def numa_nodes():
    """{node number (str): [cpus]} from /sys/devices/system/node, {} when absent."""
    nodes = {}
    for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*/cpulist")):
        number = os.path.basename(os.path.dirname(path))[4:]
        cpus = parse_cpulist(read_text(path))
        if cpus:
            nodes[number] = cpus
    return nodes


def _rlimits():
    try:
        import resource
    except ImportError:
        return None
    limits = {}
    for name in RLIMITS:
        code = getattr(resource, "RLIMIT_" + name, None)
        if code is None:
            continue
        soft, _hard = resource.getrlimit(code)
        limits[name.lower()] = None if soft == resource.RLIM_INFINITY else soft
    return limits


def _gpu_numa(torch):
    """[{index, pci, numa_node}] for the CUDA devices, only when CUDA is already up
    (the gpu collector initialised it; this one never starts a context itself)."""
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_initialized():
        return []
    out = []
    for index in range(cuda.device_count()):
        props = cuda.get_device_properties(index)
        bus = getattr(props, "pci_bus_id", None)
        if bus is None:
            continue
        pci = "%04x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), bus,
                                   getattr(props, "pci_device_id", 0))
        node = read_text("/sys/bus/pci/devices/%s/numa_node" % pci)
        out.append({"index": index, "pci": pci,
                    "numa_node": int(node) if node and node.lstrip("-").isdigit() else None})
    return out


def collect_system(torch):
    """Transparent huge pages, per-process limits, NUMA nodes and the GPUs' nodes.

    Returns:
        {"thp_enabled", "thp_defrag": the selected value ("always", "madvise",
        "never"), "rlimits": {name: soft limit or None = unlimited}, "numa_nodes":
        {node: [cpus]}, "process_nodes": nodes the affinity mask touches,
        "gpu_numa": [{index, pci, numa_node}]}.
    """
    nodes = numa_nodes()
    affinity = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
    return {
        "thp_enabled": _selected(read_text(THP_DIR + "/enabled")),
        "thp_defrag": _selected(read_text(THP_DIR + "/defrag")),
        "rlimits": _rlimits(),
        "numa_nodes": nodes,
        "process_nodes": sorted((n for n, cpus in nodes.items() if affinity & set(cpus)), key=int),
        "gpu_numa": _gpu_numa(torch),
    }


def _get(fn):
    try:
        return fn()
    except Exception:  # noqa: BLE001 -- an older torch lacks the setting
        return None


#: The settings that decide how torch computes fp32 matmuls and convolutions (name ->
#: getter; https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices).
FP32_SETTINGS = (
    ("float32_matmul_precision", lambda torch: torch.get_float32_matmul_precision()),
    ("cuda_matmul_allow_tf32", lambda torch: bool(torch.backends.cuda.matmul.allow_tf32)),
    ("cudnn_allow_tf32", lambda torch: bool(torch.backends.cudnn.allow_tf32)),
)
#: torch >= 2.9's per-backend fp32_precision ("ieee", "tf32", "bf16"; "none": inherited),
#: https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices
FP32_PRECISION_BACKENDS = ("cuda.matmul", "cudnn.conv", "mkldnn.matmul", "mkldnn.conv")
#: Environment variables that switch fp32 math below torch's flags: cuBLAS/cuDNN
#: (https://docs.nvidia.com/cuda/cublas/index.html#tf32-override), torch's start-up
#: default for cuBLAS, oneDNN (https://uxlfoundation.github.io/oneDNN/dev_guide_attributes_fpmath_mode.html).
FP32_ENV = ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
            "ONEDNN_DEFAULT_FPMATH_MODE")


def _attribute(obj, dotted):
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj


def fp32_math_mode(torch):
    """The fp32 math mode in effect now, one line of "name=value" (settings this torch
    lacks and unset variables left out), e.g. "float32_matmul_precision=high
    cuda_matmul_allow_tf32=True cudnn_allow_tf32=True cuda.matmul.fp32_precision=tf32
    NVIDIA_TF32_OVERRIDE=0".  Read, never set: what a job in this process gets."""
    values = [(name, _get(lambda get=get: get(torch))) for name, get in FP32_SETTINGS]
    values += [(name + ".fp32_precision", _get(
        lambda name=name: str(_attribute(torch.backends, name + ".fp32_precision"))))
        for name in FP32_PRECISION_BACKENDS]
    values += [(name, os.environ.get(name)) for name in FP32_ENV]
    return " ".join("%s=%s" % (name, value) for name, value in values if value is not None)


def collect_math(torch):
    """Torch settings that change the math (and so the speed) of fp32 and reductions.

    Sources: https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices
    and https://pytorch.org/docs/stable/notes/randomness.html.  Values as torch
    reports them; None where this torch has no such setting.
    """
    backends = torch.backends
    return {
        **{name: _get(lambda get=get: get(torch)) for name, get in FP32_SETTINGS},
        "cuda_matmul_allow_fp16_reduced": _get(
            lambda: bool(backends.cuda.matmul.allow_fp16_reduced_precision_reduction)),
        "cuda_matmul_allow_bf16_reduced": _get(
            lambda: bool(backends.cuda.matmul.allow_bf16_reduced_precision_reduction)),
        "cudnn_benchmark": _get(lambda: bool(backends.cudnn.benchmark)),
        "cudnn_deterministic": _get(lambda: bool(backends.cudnn.deterministic)),
        "deterministic_algorithms": _get(torch.are_deterministic_algorithms_enabled),
        "deterministic_warn_only": _get(torch.is_deterministic_algorithms_warn_only_enabled),
    }


def library_name(path):
    """(stem, version) of a shared object's file name: "libgomp.so.1.0.0" ->
    ("libgomp", "1.0.0"); a hash-suffixed wheel copy "libgomp-a34b3233.so.1" ->
    ("libgomp", "1"); None for names that are not "lib*.so*" (Python extensions)."""
    match = _SO_NAME.match(os.path.basename(path))
    if not match:
        return None
    return match.group("stem"), match.group("version") or ""


def collect_libraries(torch):
    """Every shared library mapped in this process: {stem: {"version", "path"}}.

    Source: /proc/self/maps.  Python extension modules are left out (their names
    say the interpreter, not a library version).
    """
    libraries = {}
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) < 6 or ".so" not in fields[-1]:
                    continue
                named = library_name(fields[-1])
                if named and named[0] not in libraries:
                    libraries[named[0]] = {"version": named[1], "path": fields[-1]}
    except OSError:
        return {"libraries": None}
    return {"libraries": dict(sorted(libraries.items()))}


def _triton_required(torch):
    """The triton requirement in torch's metadata (wheels pin one), else None."""
    try:
        from importlib import metadata
        requires = metadata.requires("torch") or []
    except Exception:  # noqa: BLE001 -- a source build has no metadata
        return None
    for line in requires:
        if re.match(r"^(pytorch-)?triton\b", line):
            return line.split(";")[0].strip()
    return None


def _triton_version():
    try:
        from importlib import metadata
        for name in ("triton", "pytorch-triton"):
            try:
                return metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
    except Exception:  # noqa: BLE001
        return None
    return None


def smoke_compile(cuda, timeout_s=SMOKE_COMPILE_TIMEOUT_S):
    """Run a tiny torch.compile in a child interpreter; {"ok", "seconds", "error"}."""
    import time
    start = time.monotonic()
    try:
        done = subprocess.run(code_argv(sys.executable, _SMOKE % bool(cuda)),
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "seconds": timeout_s, "error": "timed out after %.0f s" % timeout_s}
    lines = [l for l in done.stderr.splitlines() if l.strip()]
    error = next((l for l in reversed(lines) if re.match(r"^[\w.]+(Error|Exception)\b", l)),
                 lines[-1] if lines else "exit status %d" % done.returncode)
    return {"ok": done.returncode == 0, "seconds": round(time.monotonic() - start, 3),
            "error": None if done.returncode == 0 else error[:300]}


def collect_compile(torch):
    """What torch.compile (inductor) needs: a C++ compiler and Python.h for CPU code,
    Triton for GPU code (pytorch/pytorch#92745, #125093).  The smoke compile runs
    only when SMOKE_COMPILE_VAR is "1" (bounded by SMOKE_COMPILE_TIMEOUT_S)."""
    cxx = os.environ.get("CXX") or next(
        (c for c in ("g++", "c++", "clang++") if shutil.which(c)), None)
    include = sysconfig.get_paths().get("include") or ""
    cuda = bool(getattr(torch.version, "cuda", None))
    return {
        "cxx": shutil.which(cxx) if cxx else None,
        "python_h": os.path.isfile(os.path.join(include, "Python.h")),
        "cuda_build": cuda,
        "triton_found": importlib.util.find_spec("triton") is not None,
        "triton_version": _triton_version(),
        "triton_required": _triton_required(torch),
        "smoke": smoke_compile(cuda) if os.environ.get(SMOKE_COMPILE_VAR) == "1" else None,
    }
