"""The one fact layer: what a probe's facts say about cores, capability, BLAS, OpenMP.

Every rule, remedy and trial reads a fact through this module, so a finding and the
trial meant to confirm it count the same cores and see the same libraries.  Small pure
views over a ProbeResult's facts (probe/facts.py); a fact the probe could not collect
gives None or an empty list, never an exception.

Sources: the probe's `/proc/self/maps` scan (`facts["mapped_libraries"]`) and
threadpoolctl's `threadpool_info()` (`facts["threadpools"]`), which adds each
library's threading layer and thread count, and FlexiBLAS's current backend
(threadpoolctl >= 3.3).  Libraries bundled by numpy/scipy wheels (`numpy.libs/`,
`scipy_openblas`) serve numpy, not torch, and are left out of torch's BLAS.
"""

import math
import os
import re
from typing import Dict, List, Mapping, NamedTuple, Optional

from eb_torchperf.records.measurements import ProbeResult

#: ATen CPU capabilities on x86-64, lowest first.  ATEN_CPU_CAPABILITY takes the
#: lower-case names; torch 1.x prints "NO AVX" for DEFAULT and knew AVX
#: (aten/src/ATen/native/DispatchStub.cpp, compute_cpu_capability).
CAPABILITIES = ("DEFAULT", "AVX", "AVX2", "AVX512")
#: CPU flags ATen requires for each capability (same file: cpuinfo_has_x86_* checks).
CAPABILITY_FLAGS = {"AVX512": ("avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"),
                    "AVX2": ("avx2", "fma")}

#: Paths of libraries that numpy/scipy wheels bring for themselves (auditwheel layout).
NOT_TORCH = re.compile(r"(numpy|scipy)[^/]*\.libs/|scipy_openblas", re.I)
#: (pattern on the full path, BLAS kind); first match wins, so the specific names come
#: before the generic `libblas.so` of the Debian/Ubuntu alternatives (reference BLAS).
BLAS_KINDS = (
    (re.compile(r"flexiblas", re.I), "FlexiBLAS"),
    (re.compile(r"mkl", re.I), "MKL"),
    (re.compile(r"openblas", re.I), "OpenBLAS"),
    (re.compile(r"aocl|amd-blis|libblis-mt", re.I), "AOCL-BLAS"),
    (re.compile(r"blis", re.I), "BLIS"),
    (re.compile(r"armpl", re.I), "Arm Performance Libraries"),
    (re.compile(r"nvpl", re.I), "NVPL"),
    (re.compile(r"essl", re.I), "ESSL"),
    (re.compile(r"atlas|libsatlas|libtatlas", re.I), "ATLAS"),
    (re.compile(r"(^|/)lib(ref)?blas\.so|netlib", re.I), "reference BLAS"),
)
#: OpenMP runtimes by library basename.
OPENMP_KINDS = (
    (re.compile(r"^libgomp[-.]"), "GNU libgomp"),
    (re.compile(r"^libiomp5"), "Intel libiomp5"),
    (re.compile(r"^lib(omp|omp5)[-.]"), "LLVM libomp"),
)
_FLEXIBLAS_BACKEND = re.compile(r"libflexiblas_(\w+)\.so", re.I)


class BlasLibrary(NamedTuple):
    """torch's BLAS as loaded in the probed process.

    Attributes:
        kind: e.g. "OpenBLAS", "reference BLAS", "FlexiBLAS", "MKL (linked into torch)".
        path: the mapped library file (None when linked statically, as in the wheels).
        backend: FlexiBLAS's backend ("OPENBLAS", "IMKL", ...) or None.
        threading_layer: "pthreads", "openmp", ... (threadpoolctl), None if unknown.
        num_threads: the library's thread count (threadpoolctl), None if unknown.
    """

    kind: str
    path: Optional[str]
    backend: Optional[str]
    threading_layer: Optional[str]
    num_threads: Optional[int]

    def describe(self) -> str:
        """"OpenBLAS /usr/lib/.../libblas.so.3 (pthreads, 2 threads)"."""
        parts = [self.kind + (" → " + self.backend if self.backend else "")]
        if self.path:
            parts.append(self.path)
        extra = [x for x in (self.threading_layer, self.num_threads is not None
                             and "%d threads" % self.num_threads) if x]
        return " ".join(parts) + (" (%s)" % ", ".join(extra) if extra else "")


def blas_kind(path: str) -> Optional[str]:
    """BLAS kind of a library path, None for libraries that are not BLAS."""
    name = os.path.basename(path)
    if re.search(r"lapack|omp|dnnl|mkldnn", name, re.I) and "mkl" not in name.lower():
        return None
    return next((kind for pattern, kind in BLAS_KINDS if pattern.search(path)), None)


def openmp_kind(path: str) -> Optional[str]:
    """OpenMP runtime of a library path ("GNU libgomp", ...), None if not OpenMP."""
    name = os.path.basename(path)
    return next((kind for pattern, kind in OPENMP_KINDS if pattern.search(name)), None)


def mapped(probe: ProbeResult) -> List[str]:
    """Mapped BLAS/LAPACK/OpenMP/oneDNN library paths (empty when unreadable)."""
    return list(probe.fact("mapped_libraries", "libraries") or [])


def pools(probe: ProbeResult, user_api: str) -> List[dict]:
    """threadpoolctl pools of `user_api` ("blas", "openmp") that belong to torch's side."""
    return [p for p in probe.fact("threadpools", "pools") or ()
            if p.get("user_api") == user_api and not NOT_TORCH.search(p.get("filepath", ""))]


def _flexiblas_backend(probe: ProbeResult, paths: List[str]) -> Optional[str]:
    for pool in pools(probe, "blas"):
        if pool.get("internal_api") == "flexiblas" and pool.get("current_backend"):
            return str(pool["current_backend"])
    for path in paths:
        match = _FLEXIBLAS_BACKEND.search(os.path.basename(path))
        if match:
            return match.group(1).upper()
    return (probe.fact("env", "FLEXIBLAS") or None)


def torch_blas(probe: ProbeResult) -> Optional[BlasLibrary]:
    """The BLAS torch calls, from mapped libraries and threadpoolctl.

    Returns:
        BlasLibrary; for an MKL build with no MKL library mapped, kind
        "MKL (linked into torch)"; None when nothing is known.
    """
    paths = [p for p in mapped(probe) if not NOT_TORCH.search(p) and blas_kind(p)]
    kinds = {p: blas_kind(p) for p in paths}
    chosen = next((p for p in paths if kinds[p] == "FlexiBLAS"), paths[0] if paths else None)
    if chosen is None:
        if probe.build.blas_info == "mkl":
            return BlasLibrary("MKL (linked into torch)", None, None, None, None)
        return None
    backend = _flexiblas_backend(probe, paths) if kinds[chosen] == "FlexiBLAS" else None
    pool = _pool_for(probe, chosen, paths)
    return BlasLibrary(kinds[chosen], chosen, backend,
                       pool.get("threading_layer") if pool else None,
                       pool.get("num_threads") if pool else None)


def _pool_for(probe: ProbeResult, chosen: str, paths: List[str]) -> Optional[dict]:
    """The threadpoolctl pool of the chosen library, else of another torch-side BLAS."""
    blas_pools = pools(probe, "blas")
    exact = [p for p in blas_pools if p.get("filepath") == chosen]
    threaded = [p for p in blas_pools if p.get("threading_layer")]
    return (exact or threaded or [None])[0]


def openmp_runtimes(probe: ProbeResult) -> Dict[str, List[str]]:
    """OpenMP runtime kind -> distinct library files mapped in the process.

    numpy/scipy wheel copies count too: a second OpenMP runtime in the process
    competes for the same cores whoever loaded it.  A symlink name reported by
    threadpoolctl and the real file in /proc/self/maps (same folder, same name up
    to ".so") are one copy.
    """
    files = set(mapped(probe))
    files.update(p.get("filepath") for p in probe.fact("threadpools", "pools") or ()
                 if p.get("user_api") == "openmp" and p.get("filepath"))
    runtimes: Dict[str, List[str]] = {}
    seen = set()
    for path in sorted(files, key=lambda p: (-len(p), p)):
        kind = openmp_kind(path)
        copy = (os.path.dirname(path), os.path.basename(path).split(".so")[0])
        if kind and copy not in seen:
            seen.add(copy)
            runtimes.setdefault(kind, []).append(path)
    return {kind: sorted(paths) for kind, paths in runtimes.items()}


def machine(probe: ProbeResult) -> Optional[str]:
    """`platform.machine()` of the probed host ("x86_64", "aarch64")."""
    return probe.fact("cpu", "machine")


def is_x86_64(probe: ProbeResult) -> bool:
    """True on x86-64 hosts (where upstream wheels use MKL and oneDNN)."""
    return machine(probe) in ("x86_64", "AMD64")


def usable_cores(probe: ProbeResult) -> Optional[int]:
    """Cores the process may use: its affinity mask, capped by the cgroup CPU quota.

    A fractional quota is rounded UP (1.5 CPUs -> 2): two threads on a 1.5-CPU quota
    get 1.5 CPUs of work done between them, one thread leaves half a CPU unused; the
    JDK's container support rounds the same way (OpenJDK JDK-8146115,
    https://bugs.openjdk.org/browse/JDK-8146115).

    Returns:
        At least 1; None when the probe could not read the affinity mask.
    """
    allowed = probe.fact("cpu", "allowed_cores")
    quota = probe.fact("cpu", "cgroup_cpu_quota")
    if allowed is None:
        return None
    if quota:
        return max(1, min(int(allowed), math.ceil(quota)))
    return int(allowed)


def torch_blas_pools(probe: ProbeResult) -> List[dict]:
    """The BLAS pools torch itself may call: not a numpy/scipy copy (NOT_TORCH), and
    only MKL when the build says BLAS_INFO=mkl (the wheels link MKL statically)."""
    found = pools(probe, "blas")
    if (probe.build.blas_info or "").lower() == "mkl":
        found = [p for p in found if p.get("internal_api") == "mkl"]
    return found


def plain_libblas(probe: ProbeResult) -> Optional[str]:
    """Path of a mapped `libblas.so.3*` (the Debian/Ubuntu alternatives name), else None."""
    return next((p for p in mapped(probe) if os.path.basename(p).startswith("libblas.so")),
                None)


def openmp_libraries(probe: ProbeResult) -> List[str]:
    """Every distinct OpenMP runtime file in the process (openmp_runtimes, flattened)."""
    return sorted(p for paths in openmp_runtimes(probe).values() for p in paths)


def cpu_capability(probe: ProbeResult) -> Optional[str]:
    """Run-time CPU capability (`torch.backends.cpu.get_cpu_capability()`, torch >= 2.0),
    else the build's "CPU capability usage" line of `torch.__config__.show()`."""
    return probe.fact("torch", "cpu_capability") or probe.build.cpu_capability


def normal_capability(name: Optional[str]) -> Optional[str]:
    """A capability name in CAPABILITIES terms ("no avx" -> "DEFAULT"), None if unknown."""
    upper = (name or "").strip().upper()
    upper = "DEFAULT" if upper == "NO AVX" else upper
    return upper if upper in CAPABILITIES else None


def capability_rank(name: Optional[str]) -> Optional[int]:
    """Position of a capability name in CAPABILITIES (any case); None when unknown."""
    normal = normal_capability(name)
    return CAPABILITIES.index(normal) if normal else None


def current_capability(probe: ProbeResult) -> Optional[str]:
    """The capability torch runs with, in CAPABILITIES terms; None if unknown."""
    return normal_capability(cpu_capability(probe))


def best_capability(probe: ProbeResult) -> Optional[str]:
    """Highest capability the CPU's flags allow (x86-64 only), None elsewhere.

    AVX512 needs AVX512F/BW/DQ/VL and FMA, AVX2 needs AVX2 and FMA: the conditions
    of `compute_cpu_capability` in pytorch `aten/src/ATen/native/DispatchStub.cpp`.
    """
    if not is_x86_64(probe):
        return None
    flags = set(probe.fact("cpu", "flags") or ())
    for name in ("AVX512", "AVX2"):
        if all(f in flags for f in CAPABILITY_FLAGS[name]):
            return name
    return "DEFAULT"


def env_of(probe: ProbeResult) -> Dict[str, str]:
    """The performance-relevant environment variables the probe saw (`facts["env"]`)."""
    return dict((probe.facts or {}).get("env") or {})
