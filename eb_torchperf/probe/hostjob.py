"""Host and job checks an A/B comparison cannot make (issue 29).

Both sides of an audit run in one job, under one cgroup, on one node's clocks: what
limits them both never shows as a difference.  These checks compare what this process
gets with what the node has.  Each returns a plain dict (the `host` facts):

    {"label": str, "process": value, "node": value, "unit": str,
     "unknown": "" or the reason nothing could be read, "source": URL}

`process` and `node` are numbers, strings, lists (one entry per GPU) or None.  A
container or VM often hides /sys files: the check then says "unknown" with the reason
instead of guessing.  Everything is read-only: nvidia-smi is only queried, never
asked to change a setting.  A `Reader` with another root path and command runner
lets tests fake /proc, /sys and nvidia-smi.
"""

import os
import shutil
import site
import subprocess
import sys

from .facts_more import parse_cpulist

SOURCE_AFFINITY = "https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html"
SOURCE_CGROUP = "https://docs.kernel.org/admin-guide/cgroup-v2.html#cpu-interface-files"
SOURCE_TOPOLOGY = "https://docs.kernel.org/admin-guide/cputopology.html"
SOURCE_CPUFREQ = "https://docs.kernel.org/admin-guide/pm/cpufreq.html"
SOURCE_PSTATE = "https://docs.kernel.org/admin-guide/pm/intel_pstate.html"
SOURCE_NUMA_BALANCING = "https://docs.kernel.org/admin-guide/sysctl/kernel.html#numa-balancing"
SOURCE_THP = "https://docs.kernel.org/admin-guide/mm/transhuge.html"
SOURCE_NVIDIA_SMI = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"
SOURCE_PCI_NUMA = "https://docs.kernel.org/PCI/sysfs-pci.html"

CPU_DIR = "/sys/devices/system/cpu"
#: nvidia-smi --query-gpu fields, in the order the reply lists them.
GPU_FIELDS = ("index", "pci.bus_id", "power.limit", "power.default_limit",
              "clocks.applications.graphics", "clocks.default_applications.graphics")
GPU_TIMEOUT_S = 10.0


def _run_command(argv, timeout_s):
    """stdout of `argv`, or None when it cannot run, fails or times out."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=timeout_s, check=False, universal_newlines=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


class Reader:
    """Where the checks read: files under `root`, commands through `run(argv,
    timeout_s) -> stdout or None`, `which(name) -> path or None`, and the allowed
    CPUs (`affinity`, default os.sched_getaffinity(0))."""

    def __init__(self, root="/", run=None, which=None, affinity=None):
        self.root = root
        self.run = run or _run_command
        self.which = which or shutil.which
        self._affinity = affinity

    def read(self, path):
        """Stripped text of `path` (absolute, taken under root), None if unreadable."""
        try:
            with open(os.path.join(self.root, path.lstrip("/"))) as handle:
                return handle.read().strip()
        except OSError:
            return None

    def listdir(self, path):
        try:
            return sorted(os.listdir(os.path.join(self.root, path.lstrip("/"))))
        except OSError:
            return []

    def affinity(self):
        """Sorted allowed CPU numbers, None where the platform has no affinity call."""
        if self._affinity is not None:
            return sorted(self._affinity)
        if hasattr(os, "sched_getaffinity"):
            return sorted(os.sched_getaffinity(0))
        return None


def _check(label, source, process=None, node=None, unit="", unknown=""):
    return {"label": label, "process": process, "node": node, "unit": unit,
            "unknown": unknown, "source": source}


def online_cpus(reader):
    """CPU numbers online on the node (/sys/devices/system/cpu/online), None unreadable."""
    return parse_cpulist(reader.read(CPU_DIR + "/online"))


def check_cpus(reader):
    """Allowed CPUs (affinity) vs the CPUs online on the node."""
    allowed, online = reader.affinity(), online_cpus(reader)
    if allowed is None:
        return _check("CPUs allowed", SOURCE_AFFINITY, unknown="no sched_getaffinity here")
    if online is None:
        return _check("CPUs allowed", SOURCE_AFFINITY, len(allowed), unit="CPUs",
                      unknown="%s/online unreadable (container without /sys?)" % CPU_DIR)
    return _check("CPUs allowed", SOURCE_AFFINITY, len(allowed), len(online), "CPUs")


def _cgroup_dirs(reader):
    """The process's cgroup folders, own first then each parent, for v2 and v1 cpu."""
    dirs = []
    for line in (reader.read("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            bases = ["/sys/fs/cgroup"]
        elif "cpu" in controllers.split(","):
            bases = ["/sys/fs/cgroup/" + controllers, "/sys/fs/cgroup/cpu"]
        else:
            continue
        for base in bases:
            rel = path.strip("/")
            while True:
                dirs.append((base + "/" + rel).rstrip("/"))
                if not rel:
                    break
                rel = rel.rpartition("/")[0]
    return dirs


def _quota_in(reader, folder):
    """CPUs a cgroup folder's quota allows: a number, "max" (none), None (no file)."""
    v2 = reader.read(folder + "/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
        return "max" if quota == "max" or not period else int(quota) / int(period)
    quota = reader.read(folder + "/cpu.cfs_quota_us")
    period = reader.read(folder + "/cpu.cfs_period_us")
    if quota is None or period is None:
        return None
    return "max" if int(quota) <= 0 else int(quota) / int(period)


def check_quota(reader):
    """The tightest cgroup CPU quota over the process's cgroup and its parents."""
    seen = [q for q in (_quota_in(reader, d) for d in _cgroup_dirs(reader)) if q is not None]
    online = online_cpus(reader)
    node = len(online) if online else None
    if not seen:
        return _check("cgroup CPU quota", SOURCE_CGROUP, node=node, unit="CPUs",
                      unknown="no cgroup CPU controller file visible")
    limits = [q for q in seen if q != "max"]
    return _check("cgroup CPU quota", SOURCE_CGROUP, round(min(limits), 2) if limits
                  else "none", node, "CPUs")


def check_smt(reader):
    """Physical cores among the allowed CPUs (SMT siblings share one core)."""
    allowed = reader.affinity()
    if not allowed:
        return _check("cores in the allowed CPUs", SOURCE_TOPOLOGY,
                      unknown="no sched_getaffinity here")
    cores = set()
    for cpu in allowed:
        text = reader.read("%s/cpu%d/topology/thread_siblings_list" % (CPU_DIR, cpu))
        if text is None:
            return _check("cores in the allowed CPUs", SOURCE_TOPOLOGY, node=len(allowed),
                          unit="cores", unknown="cpu%d topology unreadable (VM or "
                          "container hides it)" % cpu)
        cores.add(tuple(c for c in parse_cpulist(text) if c in allowed))
    return _check("cores in the allowed CPUs", SOURCE_TOPOLOGY, len(cores), len(allowed),
                  "cores")


def check_governor(reader):
    """The cpufreq governor(s) of the allowed CPUs, with the scaling driver."""
    allowed = reader.affinity() or [0]
    found = sorted({g for g in (reader.read("%s/cpu%d/cpufreq/scaling_governor"
                                            % (CPU_DIR, c)) for c in allowed) if g})
    if not found:
        return _check("CPU frequency governor", SOURCE_CPUFREQ,
                      unknown="no cpufreq in /sys (VMs and many containers hide it)")
    driver = reader.read("%s/cpu%d/cpufreq/scaling_driver" % (CPU_DIR, allowed[0]))
    return _check("CPU frequency governor", SOURCE_CPUFREQ, ", ".join(found), driver)


def check_boost(reader):
    """Turbo/boost: intel_pstate no_turbo (1 = off) or cpufreq boost (0 = off)."""
    no_turbo = reader.read(CPU_DIR + "/intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return _check("CPU boost (turbo)", SOURCE_PSTATE, "off" if no_turbo == "1" else "on",
                      "intel_pstate/no_turbo=%s" % no_turbo)
    boost = reader.read(CPU_DIR + "/cpufreq/boost")
    if boost in ("0", "1"):
        return _check("CPU boost (turbo)", SOURCE_CPUFREQ, "on" if boost == "1" else "off",
                      "cpufreq/boost=%s" % boost)
    return _check("CPU boost (turbo)", SOURCE_CPUFREQ,
                  unknown="neither intel_pstate/no_turbo nor cpufreq/boost readable")


def numa_node_count(reader):
    """NUMA nodes under /sys/devices/system/node, None when the folder is absent."""
    names = [n for n in reader.listdir("/sys/devices/system/node")
             if n.startswith("node") and n[4:].isdigit()]
    return len(names) or None


def check_numa_balancing(reader):
    """kernel.numa_balancing (0 off; 1, 2 or a mask: on) against the node count."""
    value = reader.read("/proc/sys/kernel/numa_balancing")
    nodes = numa_node_count(reader)
    if value is None:
        return _check("kernel NUMA balancing", SOURCE_NUMA_BALANCING, node=nodes,
                      unit="NUMA nodes", unknown="/proc/sys/kernel/numa_balancing unreadable")
    return _check("kernel NUMA balancing", SOURCE_NUMA_BALANCING,
                  "off" if value == "0" else "on (%s)" % value, nodes, "NUMA nodes")


def check_thp(reader):
    """Transparent huge pages: the selected `enabled` mode."""
    text = reader.read("/sys/kernel/mm/transparent_hugepage/enabled")
    if text is None:
        return _check("transparent huge pages", SOURCE_THP,
                      unknown="/sys/kernel/mm/transparent_hugepage unreadable")
    chosen = text[text.find("[") + 1:text.find("]")] if "[" in text else text
    return _check("transparent huge pages", SOURCE_THP, chosen, numa_node_count(reader),
                  "NUMA nodes")


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None  # "[N/A]", "[Not Supported]"


def _pci_sysfs(bus_id):
    """nvidia-smi's "00000000:19:00.0" -> sysfs "0000:19:00.0"."""
    domain, _, rest = bus_id.strip().lower().partition(":")
    return "%s:%s" % (domain[-4:].rjust(4, "0"), rest)


def query_gpus(reader):
    """[{index, pci, power_w, default_power_w, app_mhz, default_app_mhz, numa_node}]
    from one read-only nvidia-smi query, or a reason string when there is none."""
    if not reader.which("nvidia-smi"):
        return "no nvidia-smi"
    out = reader.run(["nvidia-smi", "--query-gpu=" + ",".join(GPU_FIELDS),
                      "--format=csv,noheader,nounits"], GPU_TIMEOUT_S)
    if out is None:
        return "nvidia-smi failed or timed out"
    gpus = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(GPU_FIELDS):
            continue
        pci = _pci_sysfs(cells[1])
        node = reader.read("/sys/bus/pci/devices/%s/numa_node" % pci)
        gpus.append({"index": cells[0], "pci": pci, "power_w": _number(cells[2]),
                     "default_power_w": _number(cells[3]), "app_mhz": _number(cells[4]),
                     "default_app_mhz": _number(cells[5]),
                     "numa_node": int(node) if node and node.lstrip("-").isdigit() else None})
    return gpus or "nvidia-smi listed no GPU"


def gpu_checks(reader):
    """Power limit vs default, application clocks vs default, NUMA node per GPU."""
    gpus = query_gpus(reader)
    specs = (("gpu_power", "GPU power limit", "power_w", "default_power_w", "W",
              SOURCE_NVIDIA_SMI),
             ("gpu_clocks", "GPU application clock", "app_mhz", "default_app_mhz", "MHz",
              SOURCE_NVIDIA_SMI),
             ("gpu_numa", "GPU NUMA node", "numa_node", None, "", SOURCE_PCI_NUMA))
    out = {}
    for name, label, key, default, unit, source in specs:
        if isinstance(gpus, str):
            out[name] = _check(label, source, unknown=gpus)
            continue
        out[name] = _check(label, source, [g[key] for g in gpus],
                           [g[default] for g in gpus] if default else None, unit)
    return out


#: name -> check(reader); the order of the report's "Host and job" section.
CHECKS = (("cpus", check_cpus), ("quota", check_quota), ("smt", check_smt),
          ("governor", check_governor), ("boost", check_boost),
          ("numa_balancing", check_numa_balancing), ("thp", check_thp))


def collect_host(torch=None, reader=None):
    """Every host and job check: {name: check dict} (see the module docstring).

    A check that raises is reported as unknown with the exception, never raised.
    """
    reader = reader or Reader()
    facts = {}
    for name, check in CHECKS:
        try:
            facts[name] = check(reader)
        except (OSError, ValueError) as exc:
            facts[name] = _check(name, "", unknown="%s: %s" % (type(exc).__name__, exc))
    facts.update(gpu_checks(reader))
    return facts


def collect_isolation(torch=None):
    """What the worker's own flags hide: {"user_site": the user site-packages folder
    when it holds anything and `python -s` kept it off sys.path, else None}."""
    folder = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if not sys.flags.no_user_site or not folder or not os.path.isdir(folder):
        return {"user_site": None}
    return {"user_site": folder if os.listdir(folder) else None}
