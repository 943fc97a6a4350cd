"""Every way the two sides of an audit differ, fact by fact, grouped.

A performance engineer with two runs side by side lists what differs and ties each
difference to the rows that moved.  `differences(target, reference)` compares the
probes' facts (environment read by torch's libraries, affinity and quota, kernel
settings, per-process limits, torch math settings, build configuration, loaded
libraries, GPU placement) and returns one `Difference` per thing that differs.
Facts that belong together are one difference (BLAS_INFO, LAPACK_INFO and the loaded
BLAS library are "BLAS"), and facts that always differ between two interpreters
(their paths, sys.path, process ids) are never compared.  Each difference says which
rules know its effect (KNOWN_EFFECTS, by key pattern) and whether it can be changed
for a trial at run time (env variable unset or set as on the reference, affinity
widened), which difftrials turns into a re-measurement.
"""

import dataclasses
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from eb_torchperf.diagnosis.effects import documented_effect
from eb_torchperf.diagnosis.facts import NOT_TORCH, cpu_capability
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.probe.facts_more import library_name
from eb_torchperf.present.units import format_cpulist as cpulist

GROUPS = ("environment", "affinity", "threads", "system", "math settings", "build",
          "library", "gpu", "compile")
#: A value the probe could not tell.
MISSING = "—"
#: Environment variables that steer how the interpreter finds its own packages and
#: libraries: changing one for a trial could make the target import another torch.
PATH_VARS = ("PYTHONPATH", "EBPYTHONPREFIXES", "LD_LIBRARY_PATH")
#: The probe's affinity switch for trials (probe.worker.AFFINITY_VAR).
AFFINITY_VAR = "EBTP_AFFINITY"
#: Library stems that belong to a build difference (BLAS, OpenMP, oneDNN), not listed
#: again among the libraries.
_BUILD_LIBS = {
    "BLAS": re.compile(r"(blas|lapack|mkl_(?!rt$)|mkl|blis|flexiblas|armpl|aocl|nvpl)", re.I),
    "OpenMP": re.compile(r"^lib(gomp|iomp5|omp|omp5)$"),
    "oneDNN": re.compile(r"(dnnl|mkldnn)", re.I),
}
#: Libraries whose versions matter on a GPU: one difference each.
_GPU_LIBS = re.compile(r"^lib(cublas|cublasLt|cudnn\w*|nccl|cudart|nvrtc|cufft|cusparse|"
                       r"cusolver|nvJitLink|cuda)$")
#: Key pattern -> rule ids whose findings cover its effect ("known effect").
KNOWN_EFFECTS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    (r"^ATEN_CPU_CAPABILITY$|^CPU capability$", ("cpu-capability-low",)),
    (r"^(OMP_NUM_THREADS|MKL_NUM_THREADS|intra-op threads|CPU quota)$",
     ("threads-vs-cores",)),
    (r"^(OMP_PROC_BIND|OMP_PLACES|GOMP_CPU_AFFINITY|KMP_AFFINITY)$", ("main-thread-pinned",)),
    (r"^(OPENBLAS_NUM_THREADS|BLIS_NUM_THREADS)$", ("blas-pthreads-with-openmp",)),
    (r"^(FLEXIBLAS\w*|BLAS)$", ("blas-not-mkl", "mkl-missing")),
    (r"^(LD_PRELOAD|OpenMP|KMP_DUPLICATE_LIB_OK)$", ("multiple-openmp", "no-openmp-scaling")),
    (r"^oneDNN$", ("onednn-off",)),
    (r"^compiler flags$", ("debug-build", "march-native")),
    (r"^USE_MPI$", ("use-mpi-differs",)),
    (r"^CUDA_LAUNCH_BLOCKING$", ("gpu-launch-blocking",)),
    (r"^(PYTORCH_CUDA_ALLOC_CONF|PYTORCH_NO_CUDA_MEMORY_CACHING)$",
     ("gpu-caching-allocator-disabled",)),
    (r"^(NVCC archs|GPU)$", ("gpu-arch-missing", "gpu-arch-ptx-only")),
    (r"^(cuDNN|libcudnn\w*)$", ("gpu-cudnn-mismatch",)),
    (r"^transparent huge pages$", ("thp-off",)),
    (r"^(CUBLAS_WORKSPACE_CONFIG|deterministic algorithms)$", ("deterministic-algorithms",)),
    (r"^GPU NUMA placement$", ("gpu-numa-remote",)),
    (r"^NCCL_(P2P|SHM|IB)_DISABLE$", ("nccl-transport-off",)),
    (r"^torch.compile prerequisites$", ("compile-unusable",)),
)


@dataclasses.dataclass(frozen=True)
class Difference:
    """One fact that differs between target and reference.

    Attributes:
        key: what differs ("DNNL_MAX_CPU_ISA", "CPU affinity", "BLAS").
        group: one of GROUPS.
        target, reference: the values (JSON: str, number, bool, list, None = unset).
        known_effect: rule ids whose findings cover it (empty: unknown effect).
        changeable: a trial can remove it at run time (env variable, affinity).
        how: what such a trial sets ("unset DNNL_MAX_CPU_ISA"), or why it cannot be
            changed at run time ("build setting: rebuild").
        trial_env: environment overrides for that trial ({} when not changeable).
        expect: what the trial's child probe must show (trials.EFFECT_CHECKS keys).
        effect, effect_source: what it does and the URL saying so (diagnosis/effects.py), "".
    """

    key: str
    group: str
    target: object
    reference: object
    known_effect: Tuple[str, ...] = ()
    changeable: bool = False
    how: str = ""
    trial_env: Dict[str, Optional[str]] = dataclasses.field(default_factory=dict)
    expect: Dict[str, object] = dataclasses.field(default_factory=dict)
    effect: str = ""
    effect_source: str = ""

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Difference":
        return cls(**dict(data, known_effect=tuple(data.get("known_effect") or ())))


def known_effect(key: str) -> Tuple[str, ...]:
    """Rule ids covering `key` (KNOWN_EFFECTS), empty when none."""
    return tuple(r for pattern, rules in KNOWN_EFFECTS if re.search(pattern, key) for r in rules)


def _diff(key, group, target, reference, **kwargs) -> Difference:
    doc = documented_effect(key)
    extra = dict(effect=doc.effect, effect_source=doc.source) if doc else {}
    return Difference(key, group, target, reference, known_effect(key), **kwargs, **extra)



# -- environment --------------------------------------------------------------------------

def _env(probe: ProbeResult) -> Dict[str, str]:
    return dict((probe.facts or {}).get("env") or {})


def environment(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """One difference per variable set differently (or only on one side)."""
    t_env, r_env = _env(target), _env(reference)
    out = []
    for key in sorted(set(t_env) | set(r_env)):
        t, r = t_env.get(key), r_env.get(key)
        if t == r:
            continue
        if key in PATH_VARS:
            out.append(_diff(key, "environment", t, r, how="search path of the interpreter: "
                             "not changed in a trial (it could load another torch)"))
            continue
        how = "unset %s" % key if r is None else "set %s=%s as on the reference" % (key, r)
        out.append(_diff(key, "environment", t, r, changeable=True, how=how,
                         trial_env={key: r}, expect={"env": {key: r}}))
    return out


# -- affinity, threads, system ------------------------------------------------------------

def _cores(cpus: str, count: int) -> str:
    """"0 (1 core)", "0-15 (16 cores)"."""
    return "%s (%d core%s)" % (cpus, count, "" if count == 1 else "s")


def affinity(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """CPU affinity mask, cgroup quota, NUMA nodes touched; intra-op threads where the
    affinity is the same (else they follow from it and its trial covers them)."""
    out = []
    t_aff, r_aff = target.fact("cpu", "affinity"), reference.fact("cpu", "affinity")
    if t_aff is not None and r_aff is not None and sorted(t_aff) != sorted(r_aff):
        ref_list = cpulist(r_aff)
        out.append(_diff("CPU affinity", "affinity", _cores(cpulist(t_aff), len(t_aff)),
                         _cores(ref_list, len(r_aff)), changeable=True,
                         how="run the target with the reference's affinity (taskset -c %s)"
                             % ref_list,
                         trial_env={AFFINITY_VAR: ref_list}, expect={"affinity": len(r_aff)}))
    for key, section, name in (("CPU quota", "cpu", "cgroup_cpu_quota"),
                               ("NUMA nodes of the process", "system", "process_nodes")):
        t, r = target.fact(section, name), reference.fact(section, name)
        if t != r and not (key.startswith("NUMA") and out):
            out.append(_diff(key, "affinity", t, r, how="job or cgroup setting: set it in the "
                             "batch job (e.g. Slurm --cpus-per-task), not at run time"))
    t_thr, r_thr = target.fact("torch", "intra_op_threads"), reference.fact("torch", "intra_op_threads")
    if t_thr != r_thr and not out:
        out.append(_diff("intra-op threads", "threads", t_thr, r_thr, changeable=r_thr is not None,
                         how="set OMP_NUM_THREADS=%s as on the reference" % r_thr,
                         trial_env={"OMP_NUM_THREADS": str(r_thr)}, expect={"threads": r_thr}))
    return out


def system(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """Transparent huge pages, governor, per-process limits (kernel or job settings)."""
    out = []
    thp = lambda p: (p.fact("system", "thp_enabled"), p.fact("system", "thp_defrag"))  # noqa: E731
    if thp(target) != thp(reference):
        out.append(_diff("transparent huge pages", "system", "enabled=%s, defrag=%s" % thp(target),
                         "enabled=%s, defrag=%s" % thp(reference),
                         how="kernel setting (/sys/kernel/mm/transparent_hugepage)"))
    t_gov, r_gov = target.fact("cpu", "governor"), reference.fact("cpu", "governor")
    if t_gov != r_gov:
        out.append(_diff("CPU governor", "system", t_gov, r_gov, how="node setting (cpufreq)"))
    applied = lambda p: p.fact("allocator", "applied")  # noqa: E731
    if None not in (applied(target), applied(reference)) and applied(target) != applied(reference):
        # probe/allocator.py: the workers' heap-reuse setting, left off on a side whose
        # environment tunes malloc (MALLOC_*, GLIBC_TUNABLES) or sets EBTP_KEEP_MALLOC
        out.append(_diff("benchmark workers' malloc setting", "system",
                         target.fact("allocator", "reason"), reference.fact("allocator", "reason"),
                         how="set by the probe unless the environment tunes glibc malloc"))
    t_lim = target.fact("system", "rlimits") or {}
    r_lim = reference.fact("system", "rlimits") or {}
    for name in sorted(set(t_lim) & set(r_lim)):
        if t_lim[name] != r_lim[name]:
            out.append(_diff("limit %s" % name, "system", t_lim[name], r_lim[name],
                             how="per-process limit (ulimit in the job script)"))
    return out


def math_settings(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """Torch settings that change the math (probe facts `math`): deterministic
    algorithms and cuDNN determinism are one difference, TF32 flags one."""
    t, r = (target.facts or {}).get("math") or {}, (reference.facts or {}).get("math") or {}
    groups = (("fp32 math mode", ("float32_matmul_precision", "cuda_matmul_allow_tf32",
                                  "cudnn_allow_tf32", "cuda_matmul_allow_fp16_reduced",
                                  "cuda_matmul_allow_bf16_reduced")),
              ("deterministic algorithms", ("deterministic_algorithms", "deterministic_warn_only",
                                            "cudnn_deterministic")),
              ("cuDNN benchmark mode", ("cudnn_benchmark",)))
    out = []
    for key, names in groups:
        differing = [n for n in names if t.get(n) is not None and r.get(n) is not None
                     and t[n] != r[n]]
        if differing:
            out.append(_diff(key, "math settings", {n: t[n] for n in differing},
                             {n: r[n] for n in differing},
                             how="set by the environment or by the site's Python start-up "
                                 "(sitecustomize); see the environment differences"))
    return out


# -- build and libraries ------------------------------------------------------------------

def _libraries(probe: ProbeResult) -> Dict[str, str]:
    """{stem: version} of the loaded libraries; results of before the `libraries`
    collector give the BLAS/OpenMP/oneDNN ones (mapped_libraries)."""
    libs = ((probe.facts or {}).get("libraries") or {}).get("libraries")
    if libs is None:
        named = [library_name(p) for p in probe.fact("mapped_libraries", "libraries") or []]
        return dict(n for n in named if n)
    return {stem: (info or {}).get("version", "") for stem, info in libs.items()}


def _lib_text(libs: Dict[str, str], stems) -> str:
    return ", ".join("%s%s" % (s, (".so." + libs[s]) if libs[s] else "") for s in stems) or "none"


def _build_values(probe: ProbeResult) -> Dict[str, str]:
    b, libs = probe.build, _libraries(probe)
    onoff = lambda v, d=None: MISSING if v is None else ("yes %s" % d if v and d else  # noqa: E731
                                                           ("yes" if v else "no"))
    # stems only: "libgomp.so.1" and "libgomp.so.1.0.0" are one library; numpy's own
    # OpenBLAS copy (diagnosis.facts.NOT_TORCH) is not torch's
    loaded = {name: ", ".join(sorted(s for s in libs if pattern.search(s)
                                     and not NOT_TORCH.search(s))) or "none"
              for name, pattern in _BUILD_LIBS.items()}
    cuda = probe.fact("torch", "cuda")
    return {
        "torch version": probe.fact("torch", "version") or MISSING,
        "BLAS": "BLAS_INFO=%s, LAPACK_INFO=%s, MKL=%s; loaded: %s" % (
            b.blas_info or MISSING, b.lapack_info or MISSING, onoff(b.use_mkl, b.mkl_version),
            loaded["BLAS"]),
        "OpenMP": "build: %s, backend: %s; loaded: %s" % (
            onoff(b.use_openmp, b.openmp_version), probe.parallel.get("backend") or MISSING,
            loaded["OpenMP"]),
        "oneDNN": "build: %s, at run time: %s; loaded: %s" % (
            onoff(b.use_mkldnn, b.onednn_version), onoff(probe.fact("torch", "mkldnn_available")),
            loaded["oneDNN"]),
        "CPU capability": cpu_capability(probe) or MISSING,
        "compiler flags": "BUILD_TYPE=%s, -O%s, -march=%s, debug=%s" % (
            b.build_type or MISSING, b.opt_level or "?", b.march or b.mcpu or "none",
            onoff(probe.fact("torch", "debug"))),
        "USE_MPI": onoff(b.use_mpi),
        "CUDA": cuda or "none",
        "NVCC archs": " ".join(b.nvcc_archs) or MISSING,
    }


def build(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """Build configuration, grouped (BLAS, OpenMP, oneDNN, capability, flags, CUDA).
    The CPU capability can be changed at run time only downwards (ATEN_CPU_CAPABILITY),
    which an environment difference already covers."""
    t, r = _build_values(target), _build_values(reference)
    return [_diff(key, "build", t[key], r[key], how="build setting: change the easyconfig "
                  "and rebuild" if key != "CPU capability" else
                  "kernels compiled into the build (ATEN_CPU_CAPABILITY can only lower it)")
            for key in t if t[key] != r[key]]


def _same_version(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".") or not a or not b


#: Library names shown as examples in "other shared libraries" (the rest are counted).
SHOWN_LIBRARIES = 3


def _few(only: List[str], versions: List[str]) -> str:
    """A count, not a wall: "214 only here, 3 in another version (e.g. a, b, c)"."""
    if not only and not versions:
        return "none"
    counts = (["%d only here" % len(only)] if only else []) + \
        (["%d in another version" % len(versions)] if versions else [])
    return "%s (e.g. %s)" % (", ".join(counts), ", ".join((versions + only)[:SHOWN_LIBRARIES]))


def libraries(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """Loaded shared libraries outside the build groups: GPU libraries one difference
    each (version), all others together as one."""
    t, r = _libraries(target), _libraries(reference)
    if not t or not r:
        return []
    grouped = lambda s: (any(p.search(s) for p in _BUILD_LIBS.values())  # noqa: E731
                         or NOT_TORCH.search(s))
    out, others_t, others_r = [], ([], []), ([], [])
    for stem in sorted(set(t) | set(r)):
        if grouped(stem) or (stem in t and stem in r and _same_version(t[stem], r[stem])):
            continue
        if _GPU_LIBS.match(stem):
            out.append(_diff(stem, "library", t.get(stem), r.get(stem),
                             how="library found at run time: load the module the easyconfig "
                                 "depends on"))
            continue
        for side, other, names in ((t, r, others_t), (r, t, others_r)):
            if stem in side:
                names[stem in other].append(_lib_text(side, [stem]))
    if any(others_t + others_r):
        out.append(_diff("other shared libraries", "library", _few(*others_t), _few(*others_r),
                         how="libraries loaded by one side only or in another version"))
    return out


# -- GPU, compile -------------------------------------------------------------------------

def gpu_placement(probe: ProbeResult) -> Optional[str]:
    """"local" when every GPU's NUMA node is one the process may run on, "remote" when
    one is not, None when unknown (no GPU, one node, or no numa_node in sysfs)."""
    gpus = probe.fact("system", "gpu_numa") or []
    nodes = probe.fact("system", "process_nodes") or []
    if not gpus or len(probe.fact("system", "numa_nodes") or {}) < 2:
        return None
    known = [str(g["numa_node"]) for g in gpus if g.get("numa_node") not in (None, -1)]
    if not known:
        return None
    return "local" if all(n in nodes for n in known) else "remote"


def gpu(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """GPU devices seen, NUMA placement, cuDNN/NCCL versions, SDPA backend, allocator."""
    def values(p):
        g = (p.facts or {}).get("gpu") or {}
        devices = ", ".join("%s (sm %s)" % (d.get("name"), d.get("capability"))
                            for d in g.get("devices") or []) or "none"
        cudnn = (g.get("cudnn") or {}).get("runtime")
        return {"GPU": devices, "GPU NUMA placement": gpu_placement(p),
                "cuDNN": ".".join(map(str, cudnn)) if isinstance(cudnn, list) else cudnn,
                "NCCL": g.get("nccl"), "attention backend": (g.get("sdpa") or {}).get("backend"),
                "CUDA allocator": g.get("allocator_backend")}
    t, r = values(target), values(reference)
    return [_diff(key, "gpu", t[key], r[key], how="follows from the devices, libraries and "
                  "environment; see the other differences") for key in t if t[key] != r[key]]


def _compile_state(p: ProbeResult) -> Optional[str]:
    c = (p.facts or {}).get("compile")
    if not c:
        return None
    cpu = "C++ compiler %s, Python.h %s" % ("found" if c.get("cxx") else "missing",
                                           "found" if c.get("python_h") else "missing")
    if c.get("cuda_build"):
        cpu += ", Triton %s" % (c.get("triton_version") or "missing")
    smoke = c.get("smoke")
    if smoke:
        cpu += ", smoke compile %s" % ("ok" if smoke.get("ok") else "failed")
    return cpu


def compile_prerequisites(target: ProbeResult, reference: ProbeResult) -> List[Difference]:
    """What torch.compile needs (probe facts `compile`)."""
    t, r = _compile_state(target), _compile_state(reference)
    if t == r:
        return []
    return [_diff("torch.compile prerequisites", "compile", t, r,
                  how="tool chain of the installation (module dependencies)")]


#: Comparers, in display order.
COMPARERS: Tuple[Callable[[ProbeResult, ProbeResult], List[Difference]], ...] = (
    environment, affinity, system, math_settings, build, libraries, gpu, compile_prerequisites)


def differences(target: Optional[ProbeResult], reference: Optional[ProbeResult]
                ) -> List[Difference]:
    """Every difference between the two sides; [] without both probes."""
    if target is None or reference is None:
        return []
    return [d for comparer in COMPARERS for d in comparer(target, reference)]
