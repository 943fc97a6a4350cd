"""Run-time remedies: environment settings of a child process that may close a gap.

In https://github.com/easybuilders/easybuild/issues/931 the experts switched the BLAS
backend at run time (FlexiBLAS: OpenBLAS, BLIS, AOCL, imkl) to see how much each
recovers.  Each `Remedy` here is data: the diagnosis rule id it verifies, a predicate
over the target's probe facts, the environment variants to try, and the benchmarks it
can change.  A remedy never changes the installation: its variants are environment
overrides (value, or None to unset) for a fresh target worker.  `Variant.expect`
says what the child's own probe must show for the setting to have taken effect
(`check_effect`), so a trial that did nothing is reported as such, not as "no gain".
"""

import dataclasses
import glob
import os
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.facts import (best_capability, capability_rank, current_capability,
                                         env_of, mapped, openmp_kind, openmp_libraries,
                                         plain_libblas, pools, torch_blas_pools, usable_cores)
from eb_torchperf.diagnosis.families import CAPABILITY_BENCHES, GEMM_BENCHES, THREADED_BENCHES

#: FlexiBLAS backends not worth a trial: the reference implementation is never faster.
SLOW_FLEXIBLAS_BACKENDS = re.compile(r"^(netlib|__fallback__)$", re.I)

SOURCE_EB931 = "https://github.com/easybuilders/easybuild/issues/931"
SOURCE_FLEXIBLAS = "https://www.mankier.com/1/flexiblas"
SOURCE_DEBIAN_BLAS = "https://wiki.debian.org/DebianScience/LinearAlgebraLibraries"
SOURCE_THREADS = "https://pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html"
SOURCE_WAIT_POLICY = "https://gcc.gnu.org/onlinedocs/libgomp/OMP_005fWAIT_005fPOLICY.html"
SOURCE_CAPABILITY = ("https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/"
                     "DispatchStub.cpp")
SOURCE_OPENMP = "https://github.com/joblib/threadpoolctl/blob/master/multiple_openmp.md"


@dataclasses.dataclass(frozen=True)
class BlasHost:
    """BLAS alternatives found on this machine (the target runs here too).

    Attributes:
        providers: folders holding another `libblas.so.3` than the one the target
            loaded (Debian/Ubuntu alternatives: /usr/lib/<triplet>/<provider>/).
        flexiblas_backends: FlexiBLAS backends as names or library paths, used when
            the probe's threadpoolctl could not list them.
    """

    providers: Tuple[str, ...] = ()
    flexiblas_backends: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Variant:
    """One environment to try.

    Attributes:
        label: what is set, for reports ("OMP_NUM_THREADS=2").
        env: variable -> value, or None to unset it.
        expect: what the child's probe must show (keys of EFFECT_CHECKS).
    """

    label: str
    env: Dict[str, Optional[str]]
    expect: Dict[str, object]


@dataclasses.dataclass(frozen=True)
class Remedy:
    """A run-time remedy for one diagnosis finding.

    Attributes:
        id: stable identifier, e.g. "blas-provider-path".
        rule_id: the Finding.rule_id it verifies, e.g. "blas-not-mkl".
        title: one line, what it changes.
        benches: benchmark names it can change (only these are re-run).
        applies: (target) -> True when the target shows the problem.
        variants: (target, host) -> the environments to try (may be empty).
        source: URL the remedy rests on.
        rebuild: what to change in the build when the remedy does not recover the gap
            ("" when the cause is run-time only and a failed trial only means that this
            is not the cause here).
        rebuild_only_if_not_applied: the rebuild advice holds only when the setting did
            not take effect in the child (e.g. a raised CPU capability that the build
            has no kernels for); one that took effect and did not help needs no rebuild.
    """

    id: str
    rule_id: str
    title: str
    benches: Tuple[str, ...]
    applies: Callable[[ProbeResult], bool]
    variants: Callable[[ProbeResult, BlasHost], List[Variant]]
    source: str
    rebuild: str = ""
    rebuild_only_if_not_applied: bool = False


@dataclasses.dataclass(frozen=True)
class Trial:
    """A planned remedy trial: one environment, the benchmarks to re-run.

    Attributes:
        remedy_ids, rule_ids: the remedies combined (one, or several for "combined").
        label: what is set.
        env: overrides for the target worker; expect: see Variant.
        benches: benchmark names, registry order.
    """

    remedy_ids: Tuple[str, ...]
    rule_ids: Tuple[str, ...]
    label: str
    env: Dict[str, Optional[str]]
    expect: Dict[str, object]
    benches: Tuple[str, ...]

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Trial":
        return cls(**{k: tuple(v) if k in ("remedy_ids", "rule_ids", "benches") else v
                      for k, v in data.items()})


# -- remedies -----------------------------------------------------------------------------

def _threads_below(target: ProbeResult) -> bool:
    threads, cores = target.fact("torch", "intra_op_threads"), usable_cores(target)
    return threads is not None and cores is not None and threads < cores


def _threads_above(target: ProbeResult) -> bool:
    threads, cores = target.fact("torch", "intra_op_threads"), usable_cores(target)
    return threads is not None and cores is not None and threads > cores


def _threads_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    cores = usable_cores(target)
    return [Variant("OMP_NUM_THREADS=%d" % cores, {"OMP_NUM_THREADS": str(cores)},
                    {"threads": cores})]


def _not_mkl_x86(target: ProbeResult) -> bool:
    blas = (target.build.blas_info or "").lower()
    return best_capability(target) is not None and blas not in ("mkl", "")


def _plain_blas_applies(target: ProbeResult) -> bool:
    return _not_mkl_x86(target) and plain_libblas(target) is not None


def _provider_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    loaded = os.path.dirname(plain_libblas(target) or "")
    path = env_of(target).get("LD_LIBRARY_PATH")
    variants = []
    for folder in host.providers:
        if os.path.realpath(folder) == os.path.realpath(loaded):
            continue
        value = os.pathsep.join(p for p in (folder, path) if p)
        label = "libblas.so.3 from %s/ (LD_LIBRARY_PATH)" % os.path.basename(folder)
        variants.append(Variant(label, {"LD_LIBRARY_PATH": value}, {"blas_dir": folder}))
    return variants


def _flexiblas_pool(target: ProbeResult) -> Optional[dict]:
    return next((p for p in pools(target, "blas") if p.get("internal_api") == "flexiblas"), None)


def _flexiblas_applies(target: ProbeResult) -> bool:
    loaded = any("flexiblas" in os.path.basename(p) for p in mapped(target))
    return _not_mkl_x86(target) and (loaded or _flexiblas_pool(target) is not None)


def _flexiblas_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    pool = _flexiblas_pool(target) or {}
    backends = pool.get("available_backends") or host.flexiblas_backends
    current = (pool.get("current_backend") or env_of(target).get("FLEXIBLAS") or "").lower()
    return [Variant("FLEXIBLAS=%s" % name, {"FLEXIBLAS": name}, {"flexiblas_backend": name})
            for name in backends
            if name.lower() != current and not SLOW_FLEXIBLAS_BACKENDS.match(name)]


def _openmp_torch(target: ProbeResult) -> bool:
    return (target.parallel.get("backend") == "OpenMP" or bool(target.build.use_openmp)
            or bool(target.fact("torch", "openmp_available")))


def _pthread_blas(target: ProbeResult) -> List[dict]:
    return [p for p in torch_blas_pools(target)
            if p.get("threading_layer") == "pthreads" and (p.get("num_threads") or 1) > 1]


def _oversubscribed(target: ProbeResult) -> bool:
    threads = target.fact("torch", "intra_op_threads") or 1
    return threads > 1 and _openmp_torch(target) and bool(_pthread_blas(target))


#: threadpoolctl internal_api -> the variable that sets its thread count.
BLAS_THREAD_VARS = {"openblas": "OPENBLAS_NUM_THREADS", "blis": "BLIS_NUM_THREADS",
                    "mkl": "MKL_NUM_THREADS"}


def _blas_threads_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    names = sorted({BLAS_THREAD_VARS[p["internal_api"]] for p in _pthread_blas(target)
                    if p.get("internal_api") in BLAS_THREAD_VARS})
    if not names:
        return []
    return [Variant(" ".join("%s=1" % n for n in names), {n: "1" for n in names},
                    {"blas_threads": 1})]


def _passive_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    return [Variant("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"},
                    {"env": {"OMP_WAIT_POLICY": "PASSIVE"}})]


def _capability_forced(target: ProbeResult) -> bool:
    forced = env_of(target).get("ATEN_CPU_CAPABILITY")
    best, rank = capability_rank(best_capability(target)), capability_rank(forced)
    return best is not None and rank is not None and rank < best


def _unforce_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    forced = env_of(target).get("ATEN_CPU_CAPABILITY", "")
    return [Variant("ATEN_CPU_CAPABILITY unset (was %s)" % forced, {"ATEN_CPU_CAPABILITY": None},
                    {"capability_above": forced.upper()})]


def _capability_low(target: ProbeResult) -> bool:
    if env_of(target).get("ATEN_CPU_CAPABILITY"):
        return False
    current = current_capability(target)
    best = capability_rank(best_capability(target))
    return current is not None and best is not None and capability_rank(current) < best


def _raise_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    best = best_capability(target)
    return [Variant("ATEN_CPU_CAPABILITY=%s" % best.lower(),
                    {"ATEN_CPU_CAPABILITY": best.lower()}, {"capability": best})]


def _preloaded_openmp(target: ProbeResult) -> List[str]:
    entries = re.split(r"[:\s]+", env_of(target).get("LD_PRELOAD", ""))
    return [e for e in entries if e and openmp_kind(e)]


def _two_openmp(target: ProbeResult) -> bool:
    return len(openmp_libraries(target)) > 1 and bool(_preloaded_openmp(target))


def _drop_preload_variants(target: ProbeResult, host: BlasHost) -> List[Variant]:
    dropped = _preloaded_openmp(target)
    kept = [e for e in re.split(r"[:\s]+", env_of(target).get("LD_PRELOAD", ""))
            if e and e not in dropped]
    return [Variant("LD_PRELOAD without %s" % ", ".join(os.path.basename(d) for d in dropped),
                    {"LD_PRELOAD": ":".join(kept) or None},
                    {"openmp_runtimes": len(openmp_libraries(target)) - 1})]


REBUILD_BLAS = ("build against MKL (an imkl dependency, BLAS_INFO=mkl, as the wheels), or make "
                "the best backend FlexiBLAS's default in the module")
REBUILD_CAPABILITY = ("the build has no kernels for the CPU's capability: rebuild without "
                      "restricting ATen's CPU_CAPABILITY list")

#: Every run-time remedy, in trial order.
REMEDIES: Tuple[Remedy, ...] = (
    Remedy("blas-flexiblas-backend", "blas-not-mkl", "switch the FlexiBLAS backend (FLEXIBLAS=)",
           GEMM_BENCHES, _flexiblas_applies, _flexiblas_variants, SOURCE_FLEXIBLAS, REBUILD_BLAS),
    Remedy("blas-provider-path", "blas-not-mkl",
           "load another libblas.so.3 provider first (LD_LIBRARY_PATH)",
           GEMM_BENCHES, _plain_blas_applies, _provider_variants, SOURCE_DEBIAN_BLAS,
           REBUILD_BLAS),
    Remedy("threads-to-cores", "threads-vs-cores", "use all allowed cores (OMP_NUM_THREADS)",
           THREADED_BENCHES, _threads_below, _threads_variants, SOURCE_THREADS),
    Remedy("threads-cap-cores", "threads-vs-cores",
           "cap threads at the allowed cores (OMP_NUM_THREADS)",
           THREADED_BENCHES, _threads_above, _threads_variants, SOURCE_THREADS),
    Remedy("blas-threads-1", "blas-pthreads-with-openmp",
           "single-threaded BLAS inside torch's OpenMP threads",
           THREADED_BENCHES, _oversubscribed, _blas_threads_variants, SOURCE_OPENMP),
    Remedy("omp-wait-passive", "blas-pthreads-with-openmp",
           "idle OpenMP threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE)",
           THREADED_BENCHES, _oversubscribed, _passive_variants, SOURCE_WAIT_POLICY),
    Remedy("cpu-capability-unforce", "cpu-capability-low",
           "let ATen pick the CPU capability (ATEN_CPU_CAPABILITY unset)",
           CAPABILITY_BENCHES, _capability_forced, _unforce_variants, SOURCE_CAPABILITY),
    Remedy("cpu-capability-raise", "cpu-capability-low",
           "raise the ATen CPU capability to the CPU's best (ATEN_CPU_CAPABILITY)",
           CAPABILITY_BENCHES, _capability_low, _raise_variants, SOURCE_CAPABILITY,
           REBUILD_CAPABILITY, rebuild_only_if_not_applied=True),
    Remedy("drop-preloaded-openmp", "multiple-openmp",
           "remove the LD_PRELOADed second OpenMP runtime",
           THREADED_BENCHES, _two_openmp, _drop_preload_variants, SOURCE_OPENMP),
)


def applicable(target: ProbeResult, remedies: Sequence[Remedy] = REMEDIES) -> List[Remedy]:
    """The remedies whose predicate holds for `target`, in REMEDIES order."""
    return [r for r in remedies if r.applies(target)]


def discover_host(target: ProbeResult, find: Callable[[str], List[str]] = glob.glob) -> BlasHost:
    """Find BLAS alternatives on this machine next to the ones the target loaded.

    - A plain `libblas.so.3` in `<libdir>/<provider>/` (Debian/Ubuntu alternatives):
      every `<libdir>/*/libblas.so.3` is a provider folder.
    - `libflexiblas.so*` in `<libdir>`: backend libraries `<libdir>/flexiblas/
      libflexiblas_*.so` (FlexiBLAS accepts a library path in FLEXIBLAS).

    Args:
        target: the target's probe (mapped libraries).
        find: glob function (tests may pass a restricted one).
    """
    providers: List[str] = []
    blas = plain_libblas(target)
    if blas:
        libdir = os.path.dirname(os.path.dirname(blas))
        found = find(os.path.join(libdir, "*", "libblas.so.3"))
        providers = sorted(os.path.dirname(p) for p in found)
    backends: List[str] = []
    flexiblas = next((p for p in mapped(target)
                      if os.path.basename(p).startswith("libflexiblas.so")), None)
    if flexiblas:
        backends = sorted(find(os.path.join(os.path.dirname(flexiblas), "flexiblas",
                                            "libflexiblas_*.so")))
    return BlasHost(tuple(providers), tuple(backends))
