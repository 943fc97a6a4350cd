"""What a target's probe facts say about its run time: cores, BLAS, OpenMP, capability.

Small pure views over a ProbeResult's facts (probe.facts), shared by the remedies and
their effect checks; a fact the probe could not collect gives None or an empty list.
"""

import os
import re
from typing import List, Mapping, Optional

from eb_torchperf.analysis.configdiff import cpu_capability
from eb_torchperf.records.measurements import ProbeResult

#: ATen CPU capabilities on x86-64, lowest first; ATEN_CPU_CAPABILITY takes the lower-case
#: names (aten/src/ATen/native/DispatchStub.cpp, compute_cpu_capability).
CAPABILITIES = ("DEFAULT", "AVX2", "AVX512")
#: CPU flags ATen requires for each capability (same file: cpuinfo_has_x86_* checks).
CAPABILITY_FLAGS = {"AVX512": ("avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"),
                    "AVX2": ("avx2", "fma")}
#: Shared objects that are OpenMP runtimes (GNU, Intel, LLVM).
OPENMP_RUNTIME = re.compile(r"^lib(gomp|iomp5|omp|omp5)[.-]")
#: numpy/scipy wheels' private OpenBLAS (libscipy_openblas*): loaded with numpy, never
#: called by torch (seen next to the torch 2.13 wheel on the dev machine).
VENDORED_BLAS = re.compile(r"scipy_openblas")


def usable_cores(target: ProbeResult) -> Optional[int]:
    """Cores the target may use: affinity mask, capped by the cgroup CPU quota (floor, >= 1)."""
    allowed = target.fact("cpu", "allowed_cores")
    quota = target.fact("cpu", "cgroup_cpu_quota")
    if allowed is None:
        return None
    return max(1, min(int(allowed), int(quota))) if quota else int(allowed)


def mapped(target: ProbeResult) -> List[str]:
    """Paths of mapped BLAS/LAPACK/OpenMP/oneDNN libraries (/proc/self/maps of the probe)."""
    return list(target.fact("mapped_libraries", "libraries") or ())


def blas_pools(target: ProbeResult) -> List[dict]:
    """threadpoolctl entries with user_api "blas"."""
    pools = target.fact("threadpools", "pools") or ()
    return [p for p in pools if p.get("user_api") == "blas"]


def torch_blas_pools(target: ProbeResult) -> List[dict]:
    """The BLAS pools torch itself may call: not a vendored private copy (VENDORED_BLAS),
    and only MKL when the build says BLAS_INFO=mkl (the wheels link MKL statically)."""
    pools = [p for p in blas_pools(target) if not VENDORED_BLAS.search(p.get("prefix") or "")]
    if (target.build.blas_info or "").lower() == "mkl":
        pools = [p for p in pools if p.get("internal_api") == "mkl"]
    return pools


def plain_libblas(target: ProbeResult) -> Optional[str]:
    """Path of a mapped `libblas.so.3*` (the Debian/Ubuntu alternatives name), else None."""
    return next((p for p in mapped(target) if os.path.basename(p).startswith("libblas.so")), None)


def openmp_runtimes(target: ProbeResult) -> List[str]:
    """Distinct mapped OpenMP runtime libraries (by real path)."""
    return sorted({p for p in mapped(target) if OPENMP_RUNTIME.match(os.path.basename(p))})


def current_capability(target: ProbeResult) -> Optional[str]:
    """ATen CPU capability in CAPABILITIES terms ("NO AVX" -> "DEFAULT"), None if unknown."""
    value = (cpu_capability(target) or "").upper()
    value = "DEFAULT" if value in ("NO AVX", "DEFAULT") else value
    return value if value in CAPABILITIES else None


def best_capability(target: ProbeResult) -> Optional[str]:
    """Highest capability the CPU's flags allow (x86-64 only), None elsewhere."""
    if target.fact("cpu", "machine") not in ("x86_64", "AMD64"):
        return None
    flags = set(target.fact("cpu", "flags") or ())
    for name in ("AVX512", "AVX2"):
        if all(f in flags for f in CAPABILITY_FLAGS[name]):
            return name
    return "DEFAULT"


def capability_rank(capability: Optional[str]) -> int:
    """Position of `capability` in CAPABILITIES; -1 when unknown."""
    return CAPABILITIES.index(capability) if capability in CAPABILITIES else -1


def env_of(target: ProbeResult) -> Mapping[str, str]:
    """The performance-relevant environment variables the probe saw (probe.facts.collect_env)."""
    return target.facts.get("env") or {}
