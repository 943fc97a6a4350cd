"""GPU diagnosis rules: host-side dispatch cost, launch latency, arch list, allocator,
synchronous launches, cuDNN version.

Each rule is `rule(target, reference, comparisons) -> list[Finding]` and reads the
probe's `gpu` facts (probe/gpu_facts.py) and the CUDA benchmarks' comparisons
(probe/suite_gpu.py).  Rules about the environment fire only where the target sees a
GPU: on a CPU-only machine these settings change nothing.
"""

from typing import Dict, List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.probe import registry
from eb_torchperf.probe.gpu_facts import arch_support, cudnn_compatible
from eb_torchperf.diagnosis.rules.scope import CPU_GEMM, CUDA_STARTUP, affects, families  # noqa: F401

#: PyTorch's CUDA semantics notes: asynchronous execution, CUDA_LAUNCH_BLOCKING, the
#: caching allocator and PYTORCH_NO_CUDA_MEMORY_CACHING.
CUDA_NOTES_URL = "https://pytorch.org/docs/stable/notes/cuda.html"
#: Published CPU vs GPU time per nn.Linear call (bf16, hidden 2048, 8192 tokens):
#: H100 DGX 13.5 µs CPU / 100 µs GPU, GH200 33.2 / 91.6, GB200 37.1 / 41.8.
DISPATCH_URL = "https://github.com/NVIDIA/TransformerEngine/issues/2053"
ARCH_URL = ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
            "#binary-compatibility")
CUDNN_URL = "https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py"

#: CPU time per call at or above GPU time per call: the device waits for the host
#: (GB200 in DISPATCH_URL: 37.1 µs CPU vs 41.8 µs GPU is at the edge).
CPU_BOUND_RATIO = 1.0
#: With a reference, CPU-bound is a finding only where the reference was clearly
#: GPU-bound (CPU/GPU below this): shapes that are launch-bound everywhere (1024 x
#: 1024 Linear: ~21 µs CPU vs ~21 µs GPU on the H200, issue 4) are not the build's fault,
#: and CPU µs of two processes of one wheel differ by up to ~15 % (measured there).
REFERENCE_GPU_BOUND_RATIO = 0.8
#: Launch latency this many times the reference's is "far above": Grace hosts issue
#: the same Linear in 2.5-2.7x the CPU time of an H100 DGX host (DISPATCH_URL); 1.5x
#: is about the geometric middle of that gap and ten times the A/A floor of 5 %.
LAUNCH_SLOWDOWN = 1.5
#: With a reference, the target's CPU µs per call must also be this many times the
#: reference's: an A/A run of the full suite on the H200 (one pair) measured 319 vs
#: 228 µs CPU per Linear fwd+bwd call (1.40x) for two processes of one wheel, so CPU
#: time alone is too noisy below the Grace-vs-x86 gap of DISPATCH_URL (2.5-2.7x).
CPU_SLOWDOWN = 1.5
#: Benchmarks that measure issue cost by design (always CPU-bound).
CPU_BOUND_EXEMPT = ("launch_cuda",)
LAUNCH_BENCH = "launch_cuda"


def _gpu(probe: Optional[ProbeResult]) -> dict:
    return ((probe.facts if probe else None) or {}).get("gpu") or {}


def _env(probe: Optional[ProbeResult], name: str) -> Optional[str]:
    """Value of `name` in the probe's GPU env facts, else in its env facts."""
    env = _gpu(probe).get("env") or {}
    if name in env:
        return env[name]
    return ((probe.facts if probe else None) or {}).get("env", {}).get(name)


def _us(seconds: Optional[float]) -> Optional[dict]:
    """Seconds per call as a quantity (shown in µs by present/units)."""
    return None if seconds is None else quantity(seconds, "s")


def _label(c: Comparison) -> str:
    return "%s %s" % (c.bench, " ".join("%s=%s" % kv for kv in c.params.items()))


def _cuda_comparisons(comparisons: Sequence[Comparison]) -> List[Comparison]:
    benches = registry.load_suites()
    return [c for c in comparisons if c.bench in benches and benches[c.bench].device == "cuda"]


def measured_effect(comparisons: Sequence[Comparison]) -> Dict[str, object]:
    """Evidence of a GPU setting's cost: launch µs/op of both sides and the CUDA
    benchmark with the lowest relative OPS (reference = 100 %)."""
    evidence: Dict[str, object] = {}
    cuda = [c for c in _cuda_comparisons(comparisons) if c.relative_ops is not None]
    launch = [c for c in cuda if c.bench == LAUNCH_BENCH and not c.params.get("sync")]
    if launch:
        evidence["launch µs/op target"] = quantity(launch[0].target.value, "µs/op")
        evidence["launch µs/op reference"] = quantity(launch[0].reference.value, "µs/op")
    if cuda:
        worst = min(cuda, key=lambda c: c.relative_ops)
        evidence["slowest GPU benchmark"] = _label(worst)
        evidence["its relative OPS"] = quantity(worst.relative_ops, "ratio",
                                                worst.ci_low, worst.ci_high)
    return evidence


def _cpu_gpu(rate) -> Optional[tuple]:
    if rate is None or "cpu_s" not in rate.extra_s or "gpu_s" not in rate.extra_s:
        return None
    return rate.extra_s["cpu_s"], rate.extra_s["gpu_s"]


def _cpu_bound_finding(c: Comparison, target: tuple, reference: Optional[tuple]) -> Finding:
    evidence = {"benchmark": _label(c), "target CPU µs/call": _us(target[0]),
                "target GPU µs/call": _us(target[1]),
                "target CPU/GPU": quantity(target[0] / target[1], "x")}
    if reference:
        evidence.update({"reference CPU µs/call": _us(reference[0]),
                         "reference GPU µs/call": _us(reference[1]),
                         "reference CPU/GPU": quantity(reference[0] / reference[1], "x")})
    return Finding(
        "gpu-cpu-bound", "warning" if reference else "info",
        "GPU work is CPU-bound: the host needs at least as long to issue %s as the GPU "
        "to run it" % c.bench, evidence,
        "The GPU idles between kernels. Check that the job's CPU cores are not "
        "oversubscribed (Slurm --cpus-per-task, OMP_NUM_THREADS), that the CPU runs at "
        "full clock, and that no debugging setting (CUDA_LAUNCH_BLOCKING, "
        "PYTORCH_NO_CUDA_MEMORY_CACHING) is set; for small ops use larger batches, "
        "CUDA graphs or torch.compile to issue fewer launches.", DISPATCH_URL, "target")


@affects(families("cuda"))
def rule_cpu_bound(target: ProbeResult, reference: Optional[ProbeResult],
                   comparisons: Sequence[Comparison]) -> List[Finding]:
    """CPU µs per call >= GPU µs per call on the target (cuda_timing.DispatchTimer).

    With a reference measured, only where the reference was GPU-bound
    (REFERENCE_GPU_BOUND_RATIO) and the target's CPU time is CPU_SLOWDOWN times the
    reference's: severity warning.  Without one: info.
    """
    findings = []
    for c in comparisons:
        times, ref_times = _cpu_gpu(c.target), _cpu_gpu(c.reference)
        if c.bench in CPU_BOUND_EXEMPT or times is None:
            continue
        if times[0] / times[1] < CPU_BOUND_RATIO:
            continue
        if ref_times and (ref_times[0] / ref_times[1] >= REFERENCE_GPU_BOUND_RATIO
                          or times[0] < CPU_SLOWDOWN * ref_times[0]):
            continue
        findings.append(_cpu_bound_finding(c, times, ref_times))
    return findings


@affects(families("cuda", only=("overhead", "dispatch")))
def rule_launch_latency(target: ProbeResult, reference: Optional[ProbeResult],
                        comparisons: Sequence[Comparison]) -> List[Finding]:
    """Launch latency (launch_cuda) LAUNCH_SLOWDOWN times the reference's or more."""
    findings = []
    for c in comparisons:
        if c.bench != LAUNCH_BENCH or c.relative_ops is None or not c.significant:
            continue
        slowdown = 1.0 / c.relative_ops
        if slowdown < LAUNCH_SLOWDOWN:
            continue
        evidence = {"benchmark": _label(c), "target µs/op": quantity(c.target.value, "µs/op"),
                    "reference µs/op": quantity(c.reference.value, "µs/op"),
                    "slowdown": quantity(slowdown, "x")}
        for side, rate in (("target", c.target), ("reference", c.reference)):
            if "cpu_s" in rate.extra_s:
                evidence["%s CPU µs/op" % side] = _us(rate.extra_s["cpu_s"])
        findings.append(Finding(
            "gpu-launch-latency", "warning",
            "Kernel launch latency is %.1fx the reference's" % slowdown, evidence,
            "Every small op pays this. Compare the GPU environment of both sides "
            "(CUDA_LAUNCH_BLOCKING, PYTORCH_NO_CUDA_MEMORY_CACHING, PYTORCH_CUDA_ALLOC_CONF), "
            "the CPU clock and load of the job's cores, and the torch build (debug or "
            "assertion-heavy builds dispatch slower).", DISPATCH_URL, "target"))
    return findings


def _arch_finding(device: dict, arch_list: List[str], status: str) -> Finding:
    missing = status == "missing"
    return Finding(
        "gpu-arch-missing" if missing else "gpu-arch-ptx-only",
        "error" if missing else "warning",
        ("torch has no kernels for %s (compute capability %s)" if missing else
         "torch ships only PTX for %s (compute capability %s): kernels are JIT-compiled")
        % (device.get("name"), device.get("capability")),
        {"device": device.get("name"), "capability": device.get("capability"),
         "arch list": " ".join(arch_list) or "(empty)", "support": status},
        "Rebuild with the device's architecture: in the easyconfig or on the eb command "
        "line set cuda_compute_capabilities (eb --cuda-compute-capabilities=%s), which "
        "EasyBuild passes to PyTorch as TORCH_CUDA_ARCH_LIST." % device.get("capability"),
        ARCH_URL, "target")


@affects(families("cuda"), CUDA_STARTUP)
def rule_arch_list(target: ProbeResult, reference: Optional[ProbeResult],
                   comparisons: Sequence[Comparison]) -> List[Finding]:
    """`torch.cuda.get_arch_list()` lacks machine code for a visible device."""
    gpu = _gpu(target)
    arch_list = gpu.get("arch_list")
    if not arch_list or not isinstance(arch_list, list):
        return []  # not recorded (the probe's call failed): nothing to judge
    findings, judged = [], set()
    for device in gpu.get("devices") or ():
        capability = device.get("capability", "0.0")
        if capability in judged:  # two cards of one kind: one finding
            continue
        judged.add(capability)
        status = arch_support(arch_list, capability)
        if status in ("missing", "ptx"):
            findings.append(_arch_finding(device, arch_list, status))
    return findings


def _env_finding(target, reference, comparisons, name, rule_id, title, advice):
    value = _env(target, name)
    evidence = {name + " (target)": value,
                name + " (reference)": _env(reference, name) if reference else None}
    evidence.update(measured_effect(comparisons))
    return [Finding(rule_id, "warning", title, evidence, advice, CUDA_NOTES_URL, "target")]


@affects(families("cuda"))
def rule_caching_allocator(target: ProbeResult, reference: Optional[ProbeResult],
                           comparisons: Sequence[Comparison]) -> List[Finding]:
    """PYTORCH_NO_CUDA_MEMORY_CACHING set to anything but "0": every allocation goes to
    cudaMalloc and every free to cudaFree, which synchronises the device.

    c10/cuda/CUDACachingAllocator.cpp `forceUncachedAllocator` reads the variable with
    c10::utils::check_env (1 = on, 0 = off) in recent torch; older releases tested
    only `getenv(...) != nullptr`, so there even "0" disables caching (not flagged here).
    """
    value = _env(target, "PYTORCH_NO_CUDA_MEMORY_CACHING")
    if not _gpu(target).get("available") or value in (None, "", "0"):
        return []
    return _env_finding(
        target, reference, comparisons, "PYTORCH_NO_CUDA_MEMORY_CACHING",
        "gpu-caching-allocator-disabled", "The CUDA caching allocator is disabled "
        "(PYTORCH_NO_CUDA_MEMORY_CACHING=%s)" % value,
        "Unset PYTORCH_NO_CUDA_MEMORY_CACHING: it is a debugging switch (for memory "
        "checkers) that makes every tensor allocation a cudaMalloc and every free a "
        "synchronising cudaFree. Look for it in the module file (modextravars), the job "
        "script and the site's profile.")


@affects(families("cuda"))
def rule_launch_blocking(target: ProbeResult, reference: Optional[ProbeResult],
                         comparisons: Sequence[Comparison]) -> List[Finding]:
    """CUDA_LAUNCH_BLOCKING=1: every kernel launch waits for the kernel to finish."""
    value = _env(target, "CUDA_LAUNCH_BLOCKING")
    if not _gpu(target).get("available") or value != "1":
        return []
    return _env_finding(
        target, reference, comparisons, "CUDA_LAUNCH_BLOCKING", "gpu-launch-blocking",
        "Kernel launches are synchronous (CUDA_LAUNCH_BLOCKING=1)",
        "Unset CUDA_LAUNCH_BLOCKING: it is a debugging switch that makes every launch "
        "wait for its kernel, so the host can no longer run ahead of the GPU. Look for "
        "it in the module file (modextravars), the job script and the site's profile.")


@affects(families("cuda", only=("conv", "attention")))
def rule_cudnn_mismatch(target: ProbeResult, reference: Optional[ProbeResult],
                        comparisons: Sequence[Comparison]) -> List[Finding]:
    """The cuDNN loaded at run time cannot serve the version torch was built with."""
    cudnn = _gpu(target).get("cudnn") or {}
    runtime, build = cudnn.get("runtime"), cudnn.get("build")
    if not runtime or not build or cudnn_compatible(runtime, build):
        return []
    text = lambda v: ".".join(str(x) for x in v)  # noqa: E731
    return [Finding(
        "gpu-cudnn-mismatch", "error",
        "cuDNN %s is loaded but torch was built with cuDNN %s" % (text(runtime), text(build)),
        {"cuDNN runtime": text(runtime), "cuDNN build": text(build),
         "LD_LIBRARY_PATH": ((target.facts or {}).get("env") or {}).get("LD_LIBRARY_PATH")},
        "torch refuses this cuDNN (convolutions and cuDNN attention fail or fall back). "
        "Load the cuDNN module the PyTorch easyconfig depends on, and make sure no other "
        "libcudnn comes first on LD_LIBRARY_PATH.", CUDNN_URL, "target")]


RULES = [rule_cpu_bound, rule_launch_latency, rule_arch_list, rule_caching_allocator,
         rule_launch_blocking, rule_cudnn_mismatch]
