"""Build-configuration rules: oneDNN, CPU capability, optimisation, -march, OpenMP, MPI.

Each rule reads the parsed `torch.__config__.show()` (`ProbeResult.build`) and the
probe's run-time facts, compares with the upstream build (the reference, else the
bundled wheel data of `wheelconfigs`), and grades with the measured benchmarks
where one applies.
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison, thread_scaling
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.bounds import (LOSS_ERROR, LOSS_WARNING, Bound, below, check_bound,
                                          grade_low)
from eb_torchperf.diagnosis.evidence import (ONEDNN_BENCHES, SOURCE_931, VECTORISED_BENCHES,
                                            family_ratio, ratio_evidence, same_minor_version,
                                            same_version_upstream, upstream, with_ratio)
from eb_torchperf.diagnosis.facts import (best_capability, capability_rank, cpu_capability,
                                         env_of, machine)
from eb_torchperf.diagnosis.rules.scope import CPU_GEMM, CUDA_STARTUP, affects, families  # noqa: F401

SOURCE_TUNING = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
SOURCE_CAPABILITY = ("https://pytorch.org/docs/stable/backends.html"
                     "#torch.backends.cpu.get_cpu_capability")
SOURCE_TOOLCHAINOPTS = "https://docs.easybuild.io/version-specific/toolchain-opts/"
SOURCE_OPTARCH = "https://docs.easybuild.io/controlling-compiler-optimization-flags/"

#: Parallel efficiency of the thread_scaling GEMM (speed-up / cores) under which
#: threads "do not help": 1.2x on 2 cores, 2.4x on 4.  MKL sgemm at n=512 scales
#: near-linearly on idle cores (measured 1.9x on the 2-core dev machine).
SCALING_EFFICIENCY = check_bound(Bound(1.0, -0.40, None, "speed-up per core"))


@affects(families("cpu", only=("conv", "gemm", "transformer")))
def onednn_off(target: ProbeResult, reference: Optional[ProbeResult],
               comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 3: oneDNN (mkldnn) off at build time, unavailable, or disabled at run time.

    Graded by the oneDNN benchmarks (conv3x3, matmul_bf16) when measured, else
    warning.  Sources: PyTorch CPU tuning guide (SOURCE_TUNING); the easyblock's
    `custom_opts` is where easyconfigs pass USE_MKLDNN=0.
    """
    if machine(target) not in ("x86_64", "aarch64"):
        return []
    reasons = {}
    if target.build.use_mkldnn is False:
        reasons["USE_MKLDNN"] = target.build.settings.get("USE_MKLDNN", "OFF")
    elif target.fact("torch", "mkldnn_available") is False:
        reasons["torch.backends.mkldnn.is_available()"] = False
    if target.fact("torch", "mkldnn_enabled") is False:
        reasons["torch.backends.mkldnn.enabled"] = False
    if not reasons:
        return []
    rows = with_ratio(comparisons, ONEDNN_BENCHES)
    ratio = family_ratio(rows)
    severity = grade_low(ratio, LOSS_ERROR, LOSS_WARNING) if ratio is not None else "warning"
    reasons.update(ratio_evidence(rows))
    return [Finding("onednn-off", severity, "oneDNN (mkldnn) is not used for convolutions and "
                    "bf16 matmuls", reasons,
                    "Build with oneDNN: drop USE_MKLDNN=0 from the easyconfig's custom_opts (the "
                    "PyTorch easyblock enables it on x86-64), and do not set "
                    "torch.backends.mkldnn.enabled = False in site code.", SOURCE_TUNING, "target")]


def _capability_case(target, reference, current, cpu_max):
    """(severity, why, evidence) for a capability below the CPU's."""
    forced = env_of(target).get("ATEN_CPU_CAPABILITY")
    same = same_version_upstream(target, reference)
    evidence = {"CPU capability in use": current, "CPU supports": cpu_max,
                "ATEN_CPU_CAPABILITY": forced or "not set"}
    if same is not None:
        evidence["upstream of the same version"] = "%s selects %s" % (same.label, same.capability)
    forced_rank = capability_rank(forced)
    if forced and forced_rank is not None and forced_rank < capability_rank(cpu_max):
        return "warning", "forced by ATEN_CPU_CAPABILITY=%s" % forced, evidence
    if same is not None and (capability_rank(same.capability) or 0) > capability_rank(current):
        return "warning", "below the upstream build of the same version", evidence
    if same is None:
        return "info", "no upstream data for this torch version", evidence
    return "info", "as the upstream build of this version does on this CPU", evidence


@affects(families("cpu"))
def cpu_capability_low(target: ProbeResult, reference: Optional[ProbeResult],
                       comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 8: ATen CPU capability below what the CPU supports.

    Warning when forced by ATEN_CPU_CAPABILITY or below the upstream build of the same
    torch version (error if the vectorised kernels then run under LOSS_ERROR of a
    same-version reference); info when upstream selects the same capability.
    Source: torch.backends.cpu.get_cpu_capability (SOURCE_CAPABILITY), DispatchStub.cpp.
    """
    current, cpu_max = cpu_capability(target), best_capability(target)
    if capability_rank(current) is None or cpu_max is None:
        return []
    if capability_rank(current) >= capability_rank(cpu_max):
        return []
    severity, why, evidence = _capability_case(target, reference, current, cpu_max)
    rows = with_ratio(comparisons, VECTORISED_BENCHES)
    evidence.update(ratio_evidence(rows))
    ratio = family_ratio(rows)
    if severity == "warning" and same_minor_version(target, reference) and ratio is not None:
        severity = "error" if below(ratio, LOSS_ERROR) else severity
    return [Finding("cpu-capability-low", severity,
                    "ATen CPU capability %s is below the CPU's %s (%s)" % (current, cpu_max, why),
                    evidence,
                    "Unset ATEN_CPU_CAPABILITY in the module (modextravars) and job scripts. If "
                    "upstream selects more for this version, rebuild with a compiler that "
                    "supports the wider ISA; PyTorch >= 2.0 selects AVX512 on AVX512 CPUs.",
                    SOURCE_CAPABILITY, "target")]


@affects(families(), CUDA_STARTUP)
def debug_build(target: ProbeResult, reference: Optional[ProbeResult],
                comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 9: debug or unoptimised build (`torch.version.debug`, BUILD_TYPE, `-O`).

    Error for a debug build, BUILD_TYPE=Debug or -O0; warning for -Og or no -O flag
    in CXX_FLAGS (the compiler default is -O0).  Sources: EasyBuild toolchain options
    `debug`/`noopt`/`lowopt` (SOURCE_TOOLCHAINOPTS).
    """
    build = target.build
    level = build.opt_level
    errors = {"torch.version.debug": True} if target.fact("torch", "debug") else {}
    if build.build_type == "Debug":
        errors["BUILD_TYPE"] = "Debug"
    if level == "0":
        errors["CXX_FLAGS -O level"] = "-O0"
    warnings = {}
    if level == "g" or (level is None and build.cxx_flags):
        warnings["CXX_FLAGS -O level"] = "-Og" if level == "g" else "none (compiler default -O0)"
    if not errors and not warnings:
        return []
    evidence = dict(errors or warnings, BUILD_TYPE=build.build_type)
    return [Finding("debug-build", "error" if errors else "warning",
                    "PyTorch is a debug or unoptimised build", evidence,
                    "Rebuild without the debug/noopt/lowopt toolchain options (toolchainopts) "
                    "and without DEBUG=1 in prebuildopts; PyTorch's Release build uses -O2.",
                    SOURCE_TOOLCHAINOPTS, "target")]


@affects(families("cpu"))
def march_native(target: ProbeResult, reference: Optional[ProbeResult],
                 comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 10: `-march=native` / `-mcpu=native` in CXX_FLAGS.

    The binaries then need the build host's CPU: on older nodes of a heterogeneous
    cluster they die with SIGILL.  Source: EasyBuild's optarch (SOURCE_OPTARCH), whose
    default is to optimise for the build host.
    """
    build = target.build
    flag = ("-march=native" if build.march == "native"
            else "-mcpu=native" if build.mcpu == "native" else None)
    if flag is None:
        return []
    evidence = {"CXX_FLAGS contains": flag,
                "this host": "%s (%s)" % (target.fact("cpu", "model"), machine(target))}
    return [Finding("march-native", "warning",
                    "Built with %s: tied to the build host's CPU" % flag, evidence,
                    "For a module shared by several node types build with eb --optarch=GENERIC "
                    "or --optarch='GCC:march=x86-64-v3' (the oldest CPU you serve), or install "
                    "one build per CPU family (as EESSI does per archspec target).",
                    SOURCE_OPTARCH, "target")]


def _scaling_evidence(comparisons, probe, side):
    speedup = thread_scaling(comparisons, side)
    cores = probe.fact("cpu", "allowed_cores") if probe is not None else None
    if speedup is None or not cores or cores < 2:
        return None, None
    return speedup, speedup / cores


def _all_cores_gemm_slower(comparisons) -> bool:
    """The all-cores GEMM of thread_scaling is measurably slower than the reference's
    (significant, so conclusive): an efficiency read off one side's noisy 1-thread
    row alone is not evidence (an H200 A/A run read 50 % against 73 %)."""
    return any(c.bench == "thread_scaling" and c.params.get("threads") == "all"
               and c.significant and c.relative_ops is not None and c.relative_ops < 1.0
               for c in comparisons)


@affects(families("cpu"))
def no_openmp(target: ProbeResult, reference: Optional[ProbeResult],
              comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 11: no OpenMP / a non-OpenMP ATen backend, or GEMM not scaling with threads.

    Config evidence (USE_OPENMP off, backend not OpenMP) gives a warning, an error when
    thread_scaling's efficiency is under SCALING_EFFICIENCY too.  An MKL build with
    OpenMP that does not scale while the reference does is a warning when its
    all-cores GEMM is also significantly slower than the reference's (a busy machine
    slows both sides, so the reference tells the two apart).  Source: SOURCE_TUNING.
    """
    backend = target.parallel.get("backend")
    config_bad = target.build.use_openmp is False or (backend not in (None, "OpenMP"))
    speedup, eff = _scaling_evidence(comparisons, target, "target")
    _, ref_eff = _scaling_evidence(comparisons, reference, "reference")
    poor = eff is not None and below(eff, SCALING_EFFICIENCY)
    ref_scales = ref_eff is None or not below(ref_eff, SCALING_EFFICIENCY)
    if config_bad:
        severity = "error" if poor else "warning"
    elif poor and ref_scales and target.build.blas_info == "mkl" and \
            _all_cores_gemm_slower(comparisons):
        severity = "warning"
    else:
        return []
    evidence = {"USE_OPENMP": target.build.settings.get("USE_OPENMP"),
                "ATen parallel backend": backend,
                "allowed cores": target.fact("cpu", "allowed_cores")}
    if speedup is not None:
        evidence["GEMM speed-up, 1 thread → all cores"] = quantity(speedup, "x")
        evidence["parallel efficiency per core"] = quantity(eff, "fraction")
    return [Finding("no-openmp-scaling", severity,
                    "Intra-op parallelism does not speed PyTorch up", evidence,
                    "Build with OpenMP (USE_OPENMP=1, the easyblock's default; do not pass "
                    "USE_OPENMP=0 or ATEN_THREADING=NATIVE in custom_opts) and check that no "
                    "OMP_NUM_THREADS=1 is set by the module or job.", SOURCE_TUNING, "target")]


@affects(families("cuda", only=("communication",)))
def use_mpi_differs(target: ProbeResult, reference: Optional[ProbeResult],
                    comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 18: USE_MPI differs from upstream: informational only.

    #931 (SOURCE_931) measured no throughput effect of USE_MPI=ON in the EasyBuild build.
    """
    view = upstream(target, reference)
    mine = target.build.use_mpi
    if view is None or mine is None or view.use_mpi is None or mine == view.use_mpi:
        return []
    return [Finding("use-mpi-differs", "info",
                    "USE_MPI=%s differs from upstream (%s)" % ("ON" if mine else "OFF",
                                                              "ON" if view.use_mpi else "OFF"),
                    {"USE_MPI": "ON" if mine else "OFF",
                     "upstream": "%s: USE_MPI=%s" % (view.label, "ON" if view.use_mpi else "OFF")},
                    "No action needed for throughput; keep USE_MPI=ON if jobs use "
                    "torch.distributed's MPI backend.", SOURCE_931, "target")]


RULES = [onednn_off, cpu_capability_low, debug_build, march_native, no_openmp, use_mpi_differs]
