"""Run-time rules: OpenMP runtimes, threads vs cores, pinning, denormals, peak
(the governor rule moved to rules/host.py).

These read what the probe saw inside the running process (mapped libraries,
threadpoolctl pools, affinity mask, cgroup quota, environment) rather than how torch
was built; most remedies are module environment variables or job settings.
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison, thread_scaling
from eb_torchperf.present.units import format_ratio
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.bounds import Bound, above, check_bound, describe, within
from eb_torchperf.diagnosis.evidence import SOURCE_931, cores_evidence, grade_gemm_peak
from eb_torchperf.diagnosis.facts import env_of, is_x86_64, openmp_runtimes, usable_cores
from eb_torchperf.diagnosis.rules.scope import CPU_GEMM, CUDA_STARTUP, affects, families  # noqa: F401

SOURCE_MULTI_OPENMP = "https://github.com/joblib/threadpoolctl/blob/master/multiple_openmp.md"
SOURCE_TUNING = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
SOURCE_GOMP = "https://gcc.gnu.org/onlinedocs/libgomp/OMP_005fPROC_005fBIND.html"
SOURCE_DENORMAL = "https://pytorch.org/docs/stable/generated/torch.set_flush_denormal.html"

#: Intra-op threads per usable core: under 0.6 leaves cores idle (1 thread on 2 cores),
#: over 1.0 oversubscribes.  The tuning guide (SOURCE_TUNING) sets one thread per
#: physical core.
THREADS_PER_CORE = check_bound(Bound(1.0, -0.40, 0.0, "threads per usable core"))
#: Over twice the cores is an error: each core time-shares >= 2 spinning OpenMP threads.
THREADS_PER_CORE_ERROR = check_bound(Bound(1.0, None, 1.0, "threads per usable core"))
#: Environment variables that bind OpenMP threads (and the initial thread) to places.
BINDING_VARS = ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY")
_NO_BINDING = ("", "false", "disabled", "none")
#: Denormal inputs slower than twice normal ones (same op, same size) are reported.
DENORMAL_SLOWDOWN = check_bound(Bound(1.0, None, 1.0, "x time of normal inputs"))



@affects(families("cpu"))
def multiple_openmp(target: ProbeResult, reference: Optional[ProbeResult],
                    comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 4: two or more OpenMP runtimes in one process.

    Different runtimes (libgomp with libiomp5 or libomp): error — each keeps its own
    pool sized to the cores, and Intel's runtime aborts with "OMP: Error #15" unless
    KMP_DUPLICATE_LIB_OK hides it.  Two copies of one runtime: warning.
    Source: threadpoolctl's note on multiple OpenMP libraries (SOURCE_MULTI_OPENMP).
    """
    runtimes = openmp_runtimes(target)
    copies = sum(len(paths) for paths in runtimes.values())
    if copies < 2:
        return []
    severity = "error" if len(runtimes) > 1 else "warning"
    evidence = {kind: ", ".join(paths) for kind, paths in runtimes.items()}
    return [Finding("multiple-openmp", severity,
                    "%d OpenMP runtime copies are loaded in one process (%s)"
                    % (copies, ", ".join(sorted(runtimes))), evidence,
                    "Keep one OpenMP runtime: build PyTorch and the dependencies it loads with "
                    "one toolchain (GCCcore -> libgomp); with imkl set MKL_THREADING_LAYER=GNU "
                    "via modextravars; do not LD_PRELOAD libiomp5, and never set "
                    "KMP_DUPLICATE_LIB_OK=TRUE as a fix.", SOURCE_MULTI_OPENMP, "target")]


def _binding(target: ProbeResult) -> dict:
    """Binding variables in effect; OMP_PROC_BIND=false turns OMP_PLACES off too."""
    env = env_of(target)
    found = {k: env[k] for k in BINDING_VARS if env.get(k, "").lower() not in _NO_BINDING}
    if env.get("OMP_PROC_BIND", "").lower() == "false":
        found.pop("OMP_PLACES", None)
    return found


def _pinned(target: ProbeResult) -> bool:
    """True when binding variables are set and the process sees a single core."""
    affinity = target.fact("cpu", "affinity") or []
    cores = target.fact("cpu", "logical_cores") or 1
    return bool(_binding(target)) and len(affinity) == 1 and cores > 1


@affects(families("cpu"))
def threads_vs_cores(target: ProbeResult, reference: Optional[ProbeResult],
                     comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 6: intra-op threads outside THREADS_PER_CORE of the usable cores.

    Usable cores: the affinity mask lowered by the cgroup CPU quota.  Too many:
    warning (error above THREADS_PER_CORE_ERROR); too few: warning, with the
    measured GEMM speed-up of thread_scaling as evidence.  Skipped when the process
    is pinned by inherited binding settings (class 7 reports that).
    Source: PyTorch CPU tuning guide (SOURCE_TUNING).
    """
    threads, cores = target.fact("torch", "intra_op_threads"), usable_cores(target)
    if not threads or not cores or _pinned(target):
        return []
    per_core = threads / cores
    if within(per_core, THREADS_PER_CORE):
        return []
    env = env_of(target)
    evidence = {"intra-op threads": threads, **cores_evidence(target),
                "threads per usable core": quantity(per_core, "x"),
                "bound": describe(THREADS_PER_CORE),
                "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "not set"),
                "MKL_NUM_THREADS": env.get("MKL_NUM_THREADS", "not set")}
    speedup = thread_scaling(comparisons, "target")
    if speedup is not None:
        evidence["measured GEMM speed-up, 1 thread → %d" % cores] = quantity(speedup, "x")
    if above(per_core, THREADS_PER_CORE):
        severity = "error" if above(per_core, THREADS_PER_CORE_ERROR) else "warning"
        title = "%d intra-op threads on %d usable cores: oversubscribed" % (threads, cores)
    else:
        severity = "warning"
        title = "%d intra-op thread%s on %d usable cores" % (threads, "s" * (threads > 1), cores)
    return [Finding("threads-vs-cores", severity, title, evidence,
                    "Set OMP_NUM_THREADS to the cores the job was given (Slurm: "
                    "OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK) or call torch.set_num_threads(); do "
                    "not hard-code a thread count in the module's modextravars.",
                    SOURCE_TUNING, "target")]


@affects(families("cpu"))
def main_thread_pinned(target: ProbeResult, reference: Optional[ProbeResult],
                       comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 7: the main thread pinned to one core by inherited OMP_PROC_BIND/KMP_AFFINITY.

    libgomp binds the initial thread when it loads (measured: OMP_PROC_BIND=true leaves
    `os.sched_getaffinity(0) == {0}` after `import torch`); inter-op threads, BLAS
    pthreads and DataLoader workers inherit that one core.  Warning, since a job given
    exactly one core looks the same.  Source: libgomp OMP_PROC_BIND (SOURCE_GOMP).
    """
    if not _pinned(target):
        return []
    evidence = dict(_binding(target))
    evidence.update({"affinity after import torch": target.fact("cpu", "affinity"),
                     "logical cores": target.fact("cpu", "logical_cores"),
                     "intra-op threads": target.fact("torch", "intra_op_threads")})
    return [Finding("main-thread-pinned", "warning",
                    "The process is pinned to one core by inherited OpenMP binding settings",
                    evidence,
                    "Unset OMP_PROC_BIND/OMP_PLACES/KMP_AFFINITY for PyTorch jobs (they are often "
                    "inherited from MPI job templates or a module's modextravars), or bind per "
                    "task with srun --cpu-bind=cores.", SOURCE_GOMP, "target")]


def _denormal_times(comparisons: Sequence[Comparison]):
    times = {c.params.get("values"): c.target.median_s for c in comparisons
             if c.bench == "denormal" and c.target is not None}
    return times.get("normal"), times.get("denormal")


@affects(families("cpu", only=("denormal",)))
def denormal_slowdown(target: ProbeResult, reference: Optional[ProbeResult],
                      comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 13: denormal inputs measurably slower than normal ones, flush-denormal off.

    Info (a property of the CPU, not the build): the `denormal` benchmark runs the
    same op on normal and on denormal fp32 inputs; slower than DENORMAL_SLOWDOWN is
    reported with the remedy.  Source: torch.set_flush_denormal (SOURCE_DENORMAL).
    """
    normal, denormal = _denormal_times(comparisons)
    if not normal or not denormal or not above(denormal / normal, DENORMAL_SLOWDOWN):
        return []
    evidence = {"denormal / normal time": quantity(denormal / normal, "x"),
                "flush-to-zero supported": target.fact("torch", "flush_denormal_supported"),
                "bound": describe(DENORMAL_SLOWDOWN)}
    return [Finding("denormal-slowdown", "info",
                    "Denormal inputs run %.1fx slower than normal ones" % (denormal / normal),
                    evidence,
                    "Models whose activations or gradients decay into denormals gain from "
                    "torch.set_flush_denormal(True) at start-up (x86 with SSE3).",
                    SOURCE_DENORMAL, "target")]


@affects(families("cpu", only=("gemm",)))
def gemm_below_peak(target: ProbeResult, reference: Optional[ProbeResult],
                    comparisons: Sequence[Comparison]) -> List[Finding]:
    """Without a reference: an MKL build's best GEMM far below the nominal peak.

    Non-MKL builds are graded by rules.blas.blas_not_mkl instead.  Bounds
    evidence.PEAK_ERROR / PEAK_WARNING; peak model in eb_torchperf.diagnosis.peak.  Source: SOURCE_931 (which models
    suffered), peak.FLOP_PER_CYCLE_FP32 (the peak).
    """
    # a reference was measured (rows it left inconclusive too): relative OPS decide
    measured = any(c.reference is not None for c in comparisons)
    if reference is not None or measured or target.build.blas_info != "mkl" \
            or not is_x86_64(target):
        return []
    graded = grade_gemm_peak(target, comparisons)
    if graded is None or graded[0] == "info":
        return []
    severity, evidence, best = graded
    return [Finding("gemm-below-peak", severity,
                    "GEMM reaches only %s of this machine's nominal peak" % format_ratio(best), evidence,
                    "Audit against the upstream wheel (--reference wheel) to tell a slow build "
                    "from a busy or throttled node; check the threads and governor findings.",
                    SOURCE_931, "target")]

RULES = [multiple_openmp, threads_vs_cores, main_thread_pinned, denormal_slowdown,
         gemm_below_peak]
