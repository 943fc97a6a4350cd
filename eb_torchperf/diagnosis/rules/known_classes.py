"""Known classes found in public reports: THP off, torch.compile unusable, deterministic
algorithms, GPU on a remote NUMA node, NCCL transports forced off.

Each reads probe facts (probe.facts_more: `system`, `math`, `compile`; `env`) and,
where a benchmark row can show the effect, grades by it.
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.diagnosis.differences import gpu_placement
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.facts import env_of
from eb_torchperf.diagnosis.rules.scope import affects, families

SOURCE_THP = "https://github.com/pytorch/pytorch/pull/93888"
SOURCE_COMPILE_CPU = "https://github.com/pytorch/pytorch/issues/92745"
SOURCE_COMPILE_GPU = "https://github.com/pytorch/pytorch/issues/125093"
SOURCE_DETERMINISTIC = "https://github.com/pytorch/pytorch/issues/117081"
SOURCE_NUMA = "https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#numa-best-practices"
SOURCE_NCCL = "https://github.com/NVIDIA/nccl/issues/631"
#: NCCL switches that force a transport off (NCCL environment documentation).
NCCL_DISABLES = ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE")
#: cuBLAS workspace settings of the deterministic mode (":4096:8" is the larger one,
#: ":16:8" the small one that costs GEMM speed, pytorch/pytorch#117081).
SMALL_CUBLAS_WORKSPACE = (":16:8",)


def _slow(comparisons: Sequence[Comparison], scope) -> List[Comparison]:
    from eb_torchperf.diagnosis.rules.scope import row_scope
    names = {"%s/%s" % pair for pair in scope}
    return [c for c in comparisons if c.significant and c.relative_ops is not None
            and c.relative_ops < 1 and row_scope(c.bench) in names]


def _rows(rows: Sequence[Comparison]) -> dict:
    return {"%s %s" % (c.bench, ",".join("%s=%s" % kv for kv in sorted(c.params.items()))):
            c.relative_ops for c in rows}


THP_SCOPE = families("cpu", only=("transformer", "gemm", "memory", "conv"))


@affects(THP_SCOPE)
def thp_off(target: ProbeResult, reference: Optional[ProbeResult],
            comparisons: Sequence[Comparison]) -> List[Finding]:
    """Transparent huge pages "never": torch's CPU allocator cannot get huge pages for
    large tensors (it madvises them, PR #93888), which costs CPU training steps."""
    if target.fact("system", "thp_enabled") != "never":
        return []
    slow = _slow(comparisons, THP_SCOPE)
    ref = reference.fact("system", "thp_enabled") if reference else None
    severity = "warning" if slow or (ref not in (None, "never")) else "info"
    return [Finding("thp-off", severity, "Transparent huge pages are off (never) for the target",
                    dict({"thp_enabled": "never", "thp_defrag": target.fact("system", "thp_defrag"),
                          "reference thp_enabled": ref}, **_rows(slow)),
                    "Ask the site to set /sys/kernel/mm/transparent_hugepage/enabled to "
                    "madvise (or always) on the compute nodes (a node setting, not part of "
                    "the easyconfig); PyTorch madvises large CPU allocations "
                    "(THP_MEM_ALLOC_ENABLE=1 in the module's modextravars turns it on for "
                    "all of them).", SOURCE_THP, "target")]


@affects(frozenset())
def compile_unusable(target: ProbeResult, reference: Optional[ProbeResult],
                     comparisons: Sequence[Comparison]) -> List[Finding]:
    """torch.compile cannot work: no C++ compiler or Python.h (CPU inductor), no or a
    mismatched Triton (GPU inductor), or the opt-in smoke compile failed."""
    facts = (target.facts or {}).get("compile")
    version = str(target.fact("torch", "version") or "0")
    if not facts or version.split(".")[0] in ("0", "1"):
        return []
    problems, source = {}, SOURCE_COMPILE_CPU
    if not facts.get("cxx"):
        problems["C++ compiler"] = "not found (CXX, g++, c++, clang++)"
    if not facts.get("python_h"):
        problems["Python.h"] = "missing"
    gpu = bool(target.fact("gpu", "available"))
    if gpu and not facts.get("triton_found"):
        problems["Triton"] = "not importable"
        source = SOURCE_COMPILE_GPU
    required, have = facts.get("triton_required"), facts.get("triton_version")
    if gpu and required and have and "==" in required and required.split("==")[1].strip() != have:
        problems["Triton"] = "%s installed, torch requires %s" % (have, required)
        source = SOURCE_COMPILE_GPU
    smoke = facts.get("smoke") or {}
    if smoke and not smoke.get("ok"):
        problems["smoke compile"] = smoke.get("error")
    if not problems:
        return []
    severity = "error" if smoke and not smoke.get("ok") else "warning"
    return [Finding("compile-unusable", severity,
                    "torch.compile cannot work on the target: %s" % ", ".join(sorted(problems)),
                    problems, "Add the tool chain inductor needs to the PyTorch module: "
                    "GCCcore (a C++ compiler) and the Python module with its headers as "
                    "run-time dependencies, and for CUDA builds the Triton that PyTorch "
                    "pins (build Triton in the same easyconfig or as a dependency).",
                    source, "target")]


DETERMINISTIC_SCOPE = families("cuda", only=("gemm", "conv", "attention", "dispatch"))


@affects(DETERMINISTIC_SCOPE)
def deterministic(target: ProbeResult, reference: Optional[ProbeResult],
                  comparisons: Sequence[Comparison]) -> List[Finding]:
    """Deterministic algorithms on, or a small cuBLAS workspace (pytorch/pytorch#117081)."""
    on = target.fact("math", "deterministic_algorithms") is True
    workspace = env_of(target).get("CUBLAS_WORKSPACE_CONFIG")
    small = workspace in SMALL_CUBLAS_WORKSPACE
    if not on and not small:
        return []
    slow = _slow(comparisons, DETERMINISTIC_SCOPE)
    return [Finding("deterministic-algorithms", "warning" if slow or small else "info",
                    "Deterministic algorithms are on%s" % (
                        " with a small cuBLAS workspace (%s)" % workspace if small else ""),
                    dict({"deterministic_algorithms": on, "CUBLAS_WORKSPACE_CONFIG": workspace},
                         **_rows(slow)),
                    "Do not set CUBLAS_WORKSPACE_CONFIG (or torch.use_deterministic_algorithms) "
                    "site-wide in the module (modextravars) or the job profile; leave "
                    "determinism to the jobs that need it, and use :4096:8 there.",
                    SOURCE_DETERMINISTIC, "target")]


NUMA_SCOPE = families("cuda", only=("memory", "dispatch", "overhead"))


@affects(NUMA_SCOPE)
def gpu_numa_remote(target: ProbeResult, reference: Optional[ProbeResult],
                    comparisons: Sequence[Comparison]) -> List[Finding]:
    """A GPU hangs off a NUMA node the process may not run on: host-device copies
    cross the socket link."""
    if gpu_placement(target) != "remote":
        return []
    slow = _slow(comparisons, NUMA_SCOPE)
    return [Finding("gpu-numa-remote", "warning",
                    "A GPU is attached to a NUMA node the process does not run on",
                    dict({"GPU NUMA nodes": [g.get("numa_node") for g in
                                             target.fact("system", "gpu_numa") or []],
                          "process NUMA nodes": target.fact("system", "process_nodes"),
                          "reference placement": gpu_placement(reference) if reference else None},
                         **_rows(slow)),
                    "Bind each task to the cores of its GPU's NUMA node in the job (Slurm "
                    "--gpu-bind=closest or --cpu-bind=ldoms, nvidia-smi topo -m shows the "
                    "affinity); nothing to change in the easyconfig.", SOURCE_NUMA, "target")]


@affects(families("cuda", only=("communication",)))
def nccl_transport_off(target: ProbeResult, reference: Optional[ProbeResult],
                       comparisons: Sequence[Comparison]) -> List[Finding]:
    """NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_IB_DISABLE set (NVIDIA/nccl#631)."""
    env = env_of(target)
    forced = {k: env[k] for k in NCCL_DISABLES if env.get(k) not in (None, "", "0")}
    if not forced:
        return []
    slow = _slow(comparisons, families("cuda", only=("communication",)))
    measured = any(c.bench.startswith("allreduce_nccl") for c in comparisons)
    return [Finding("nccl-transport-off", "error" if slow else "warning",
                    "NCCL transports are forced off (%s)" % ", ".join(sorted(forced)),
                    dict(forced, **_rows(slow), **{"all-reduce measured": measured}),
                    "Remove %s from the module (modextravars), the site profile and the job "
                    "script: NCCL then falls back to slower paths (host memory or sockets); "
                    "set them only to work around a diagnosed hardware fault."
                    % ", ".join(sorted(forced)), SOURCE_NCCL, "target")]


RULES = [thp_off, compile_unusable, deterministic, gpu_numa_remote, nccl_transport_off]
