"""Host and job rules: limits both sides share, which no A/B comparison can show.

They read the `host` facts (probe/hostjob.py: what the process gets and what the node
has).  Their findings have the subject "host": the verdict then says the build is as
fast as the reference *on this host* and what the host costs (issue 29).  A check the
host hid ("unknown") never gives a finding.  Their `affects` scope is empty: a limit
both sides share explains no difference between them (the governor rule keeps the
scope it had before it moved here).
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.rules.scope import affects, families

SUBJECT = "host"
SOURCE_CPUFREQ = "https://www.kernel.org/doc/html/latest/admin-guide/pm/cpufreq.html"
SOURCE_TUNING = "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
SOURCE_PSTATE = "https://docs.kernel.org/admin-guide/pm/intel_pstate.html"
SOURCE_NUMA_BALANCING = "https://github.com/deepseek-ai/DeepEP/issues/624"
SOURCE_NVIDIA_SMI = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
SOURCE_SLURM_CPUS = "https://slurm.schedmd.com/sbatch.html#OPT_exclusive"
#: A GPU power limit or application clock under this share of its default is a limit
#: (nvidia-smi reports both in whole watts / MHz, so 1 % absorbs rounding).
BELOW_DEFAULT = 0.99


def host_check(probe: Optional[ProbeResult], name: str) -> dict:
    """One check of probe/hostjob.py, {} when the probe had none (older results) or
    the host hid it (the check's `unknown` reason is set)."""
    check = probe.fact("host", name) if probe is not None else None
    if not isinstance(check, dict) or check.get("unknown"):
        return {}
    return check


def _number(value) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


@affects()  # shared by both sides: explains no difference
def cpus_narrow(target: ProbeResult, reference: Optional[ProbeResult],
                comparisons: Sequence[Comparison]) -> List[Finding]:
    """The job may use fewer CPUs (affinity, capped by the cgroup quota) than the node has.

    Info: the figures hold for that share (a Slurm job step on part of a node is
    normal); the verdict says so.  Source: sbatch --exclusive."""
    cpus, quota = host_check(target, "cpus"), host_check(target, "quota")
    allowed, node = _number(cpus.get("process")), _number(cpus.get("node"))
    limit = _number(quota.get("process"))
    if allowed is None or node is None:
        return []
    usable = min(allowed, limit) if limit is not None else allowed
    other = _number(host_check(reference, "cpus").get("process"))
    if usable >= node or (other is not None and other != allowed):
        return []  # a mask of the target only is a difference (differences.affinity)
    return [Finding("host-cpus-narrow", "info",
                    "The job may use %g of the node's %d CPUs: every figure is for that "
                    "share" % (usable, node),
                    {"allowed CPUs (affinity)": int(allowed), "cgroup CPU quota":
                     quota.get("process", "unknown"), "CPUs online on the node": int(node)},
                    "For whole-node figures, audit in an exclusive job (Slurm --exclusive, "
                    "all cores of the node); otherwise read the figures as those of this "
                    "job's share.", SOURCE_SLURM_CPUS, SUBJECT)]


@affects()  # shared by both sides: explains no difference
def smt_siblings(target: ProbeResult, reference: Optional[ProbeResult],
                 comparisons: Sequence[Comparison]) -> List[Finding]:
    """SMT siblings used as cores: more intra-op threads than allowed physical cores.

    Source: the PyTorch tuning guide (one thread per physical core, SOURCE_TUNING)."""
    smt = host_check(target, "smt")
    cores, cpus = _number(smt.get("process")), _number(smt.get("node"))
    threads = target.fact("torch", "intra_op_threads")
    if cores is None or cpus is None or cores >= cpus or not isinstance(threads, int) \
            or threads <= cores:
        return []
    return [Finding("host-smt-siblings", "warning",
                    "%d threads run on %d cores: SMT siblings are used as cores"
                    % (threads, cores),
                    {"intra-op threads": threads, "physical cores allowed": int(cores),
                     "CPUs allowed (with siblings)": int(cpus)},
                    "Run one thread per physical core: OMP_NUM_THREADS=%d, or Slurm "
                    "--hint=nomultithread so the job gets one CPU per core." % cores,
                    SOURCE_TUNING, SUBJECT)]


@affects(families())
def governor_powersave(target: ProbeResult, reference: Optional[ProbeResult],
                       comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 17: CPU frequency governor `powersave` on an allowed CPU.

    Read by the host check (older results: cpufreq sysfs of cpu0).  Source: Linux
    cpufreq documentation."""
    check = host_check(target, "governor")
    governor = check.get("process") if check else target.fact("cpu", "governor")
    if not governor or "powersave" not in str(governor).split(", "):
        return []
    return [Finding("governor-powersave", "warning", "CPU frequency governor is powersave",
                    {"scaling_governor": governor, "scaling_driver": check.get("node")},
                    "Ask the site admins to use the performance governor on compute nodes "
                    "(cpupower frequency-set -g performance); with intel_pstate active, "
                    "powersave is its dynamic default and costs less.",
                    SOURCE_CPUFREQ, SUBJECT)]


@affects()  # shared by both sides: explains no difference
def boost_off(target: ProbeResult, reference: Optional[ProbeResult],
              comparisons: Sequence[Comparison]) -> List[Finding]:
    """CPU boost (turbo) switched off: every core stays at or below its base clock.

    Source: intel_pstate no_turbo and cpufreq boost documentation (SOURCE_PSTATE)."""
    check = host_check(target, "boost")
    if check.get("process") != "off":
        return []
    return [Finding("host-boost-off", "warning", "CPU boost (turbo) is off on this node",
                    {"setting": check.get("node")},
                    "Ask the site admins whether turbo is off on purpose (reproducible "
                    "clocks); compute nodes usually run with it on.", SOURCE_PSTATE, SUBJECT)]


def _gpu_present(target: ProbeResult) -> bool:
    return bool(target.fact("gpu", "available")) or bool(
        host_check(target, "gpu_power").get("process"))


@affects()  # shared by both sides: explains no difference
def numa_balancing_on(target: ProbeResult, reference: Optional[ProbeResult],
                      comparisons: Sequence[Comparison]) -> List[Finding]:
    """Kernel NUMA balancing on a multi-node GPU host (16-31 ms stalls, DeepEP#624).

    task_numa_work rewrites the running process's page tables on a timer."""
    check = host_check(target, "numa_balancing")
    nodes = _number(check.get("node"))
    if not str(check.get("process", "off")).startswith("on") or not nodes or nodes < 2 \
            or not _gpu_present(target):
        return []
    return [Finding("host-numa-balancing", "warning",
                    "Kernel NUMA balancing is on on a %d-node GPU host" % nodes,
                    {"kernel.numa_balancing": check.get("process"), "NUMA nodes": int(nodes)},
                    "Ask the site admins to set sysctl kernel.numa_balancing=0 on GPU nodes "
                    "(and bind each task to its GPU's NUMA node).", SOURCE_NUMA_BALANCING,
                    SUBJECT)]


def _below_default(check: dict) -> List[str]:
    """"GPU i: x of y" for every GPU whose value is under BELOW_DEFAULT of its default."""
    now, default = check.get("process") or [], check.get("node") or []
    return ["GPU %d: %g of %g %s" % (i, a, b, check.get("unit", ""))
            for i, (a, b) in enumerate(zip(now, default))
            if _number(a) is not None and _number(b) and a < BELOW_DEFAULT * b]


@affects()  # shared by both sides: explains no difference
def gpu_below_default(target: ProbeResult, reference: Optional[ProbeResult],
                      comparisons: Sequence[Comparison]) -> List[Finding]:
    """GPU power limit or application clocks below their defaults (read, never changed).

    An earlier job or an admin may have left them so.  Source: nvidia-smi docs."""
    found = []
    for name, what, fix in (("gpu_power", "power limit", "nvidia-smi -pl <default>"),
                            ("gpu_clocks", "application clocks", "nvidia-smi -rac")):
        low = _below_default(host_check(target, name))
        if low:
            found.append(Finding(
                "host-gpu-below-default", "warning",
                "GPU %s below its default (%s)" % (what, "; ".join(low)),
                {"GPUs below default": low},
                "Ask the site admins to restore the default (%s, root only) and to reset "
                "it in the Slurm epilog; eb-torchperf never changes device settings."
                % fix, SOURCE_NVIDIA_SMI, SUBJECT))
    return found


RULES = [cpus_narrow, smt_siblings, governor_powersave, boost_off, numa_balancing_on,
         gpu_below_default]
