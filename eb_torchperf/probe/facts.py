"""Collectors of facts about the target interpreter, its torch and its host.

Each collector takes the imported torch module and returns a plain dict of JSON
values.  A missing API or unreadable file gives None / "unknown" for that field
(threadpoolctl's habit), never an exception; a collector that does raise is recorded
in `errors` by `collect_all` and the others still run.
"""

import hashlib
import os
import platform
import re
import sys

from . import allocator, facts_more, hostjob
from .envprefixes import read_by_torch
from .gpu_facts import collect_gpu
from .install_kind import collect_install

#: Mapped shared objects whose names say they provide BLAS, LAPACK, OpenMP or oneDNN.
LIBRARY_PATTERN = re.compile(
    r"(blas|lapack|omp|mkl|blis|flexiblas|dnnl|mkldnn|armpl|acml|aocl|essl|nvpl)", re.I)
#: CPU flags worth reporting (x86 vector ISA and matrix units, Arm SVE).
CPU_FLAG_PATTERN = re.compile(r"^(avx\w*|amx\w*|fma|f16c|sse4_2|sve\w*|asimd\w*|bf16|i8mm)$")


def collect_torch(torch):
    """Version, file and the two build texts (`torch.__config__.show()`/`parallel_info()`)."""
    backends = torch.backends
    capability = None
    if hasattr(backends, "cpu") and hasattr(backends.cpu, "get_cpu_capability"):
        capability = backends.cpu.get_cpu_capability()
    show = torch.__config__.show()
    git_version = getattr(torch.version, "git_version", None)
    return {
        "version": torch.__version__,
        "file": torch.__file__,
        "file_realpath": os.path.realpath(torch.__file__) if torch.__file__ else None,
        "git_version": git_version,
        "fingerprint": build_fingerprint(torch.__version__, git_version, show),
        "debug": bool(getattr(torch.version, "debug", False)),
        "cuda": getattr(torch.version, "cuda", None),
        "config_show": show,
        "parallel_info": torch.__config__.parallel_info(),
        "cpu_capability": capability,
        "mkl_available": bool(backends.mkl.is_available()),
        "mkldnn_available": bool(backends.mkldnn.is_available()),
        "mkldnn_enabled": bool(getattr(backends.mkldnn, "enabled", True)),
        "openmp_available": bool(backends.openmp.is_available()),
        "intra_op_threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "flush_denormal_supported": _flush_denormal_supported(torch),
    }


def build_fingerprint(version, git_version, config_show):
    """16 hex digits of SHA-256 over version, git version and `torch.__config__.show()`:
    equal for copies of one build (the same wheel in two venvs), different for builds
    from other sources, compilers or flags."""
    text = "\n".join(str(part) for part in (version, git_version, config_show))
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def _flush_denormal_supported(torch):
    """True if the CPU supports flush-to-zero; leaves the setting as it was (on where a
    library built with -ffast-math or a site setting turned it on: the rows' numerics
    must see it, probe.numerics)."""
    flushing = float(torch.tensor([1e-39]) * 1.0) == 0.0
    supported = bool(torch.set_flush_denormal(True))
    torch.set_flush_denormal(flushing)
    return supported


def collect_python():
    """The interpreter: executable, version, prefix, sys.path."""
    return {
        "executable": sys.executable,
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "prefix": sys.prefix,
        "path": list(sys.path),
    }


def collect_threadpools(torch):
    """Loaded BLAS/OpenMP libraries via threadpoolctl (copied in by the runner).

    Returns:
        {"available": bool, "pools": threadpoolctl.threadpool_info() list}.
    """
    try:
        import threadpoolctl
    except ImportError:
        return {"available": False, "pools": []}
    return {"available": True, "version": threadpoolctl.__version__,
            "pools": threadpoolctl.threadpool_info()}


def collect_mapped_libraries(torch):
    """Shared objects mapped in this process whose names match LIBRARY_PATTERN.

    Source: /proc/self/maps (Linux).  Returns {"libraries": sorted unique paths}.
    """
    paths = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and ".so" in fields[-1]:
                    name = os.path.basename(fields[-1])
                    if LIBRARY_PATTERN.search(name):
                        paths.add(fields[-1])
    except OSError:
        return {"libraries": None}
    return {"libraries": sorted(paths)}


def collect_env(torch=None):
    """Environment variables torch or its libraries read (envprefixes), with values.

    The probe bundle's own folder is removed from PYTHONPATH, so the value is the
    user's.  Runs before threadpoolctl is imported (which sets KMP_DUPLICATE_LIB_OK).
    """
    bundle = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in sorted(os.environ.items()) if read_by_torch(k)}
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and p != bundle]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    return env


def _cpuinfo():
    text = facts_more.read_text("/proc/cpuinfo") or ""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip()
        if sep and key not in fields:
            fields[key] = value.strip()
    return fields


def _cgroup_cpu_quota():
    """CPUs allowed by the cgroup quota (v2 cpu.max, v1 cfs files), None if unlimited."""
    v2 = facts_more.read_text("/sys/fs/cgroup/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max" and period:
            return int(quota) / int(period)
        return None
    quota = facts_more.read_text("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
    period = facts_more.read_text("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    if quota and period and int(quota) > 0:
        return int(quota) / int(period)
    return None


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def collect_cpu(torch=None):
    """CPU vendor, model, flags, cores, affinity, cgroup quota, governor, clock.

    Sources: /proc/cpuinfo, os.sched_getaffinity, /sys/fs/cgroup, cpufreq sysfs.
    Clock fields (MHz, None where unreadable, e.g. in many VMs): `max_mhz` from
    cpufreq `cpuinfo_max_freq`, `mhz` the "cpu MHz" line, `bogomips` the x86 line
    (twice the TSC frequency in MHz on current Linux kernels).
    """
    info = _cpuinfo()
    flags = (info.get("flags") or info.get("Features") or "").split()
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "machine": platform.machine(),
        "vendor": info.get("vendor_id") or info.get("CPU implementer"),
        "model": info.get("model name") or info.get("CPU part"),
        "flags": sorted(f for f in flags if CPU_FLAG_PATTERN.match(f)),
        "logical_cores": os.cpu_count(),
        "affinity": affinity,
        "allowed_cores": len(affinity) if affinity is not None else os.cpu_count(),
        "cgroup_cpu_quota": _cgroup_cpu_quota(),
        "governor": facts_more.read_text("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "family": info.get("cpu family"),
        "max_mhz": _khz_to_mhz(facts_more.read_text("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")),
        "mhz": _number(info.get("cpu MHz")),
        "bogomips": _number(info.get("bogomips")),
    }


def _khz_to_mhz(text):
    value = _number(text)
    return value / 1000.0 if value else None


#: name -> collector(torch).  Order is the order of the JSON document.
COLLECTORS = (
    ("python", lambda torch: collect_python()),
    ("env", collect_env),
    ("torch", collect_torch),
    ("install", collect_install),
    ("threadpools", collect_threadpools),
    ("mapped_libraries", collect_mapped_libraries),
    ("cpu", collect_cpu),
    ("gpu", collect_gpu),
    ("system", facts_more.collect_system),
    ("math", facts_more.collect_math),
    ("libraries", facts_more.collect_libraries),
    ("compile", facts_more.collect_compile),
    ("allocator", allocator.collect),
    ("host", hostjob.collect_host),
    ("isolation", hostjob.collect_isolation),
)


def collect_all(torch, collectors=COLLECTORS):
    """Run every collector; a failing one adds {name, exc_type, message} to `errors`."""
    facts = {"errors": []}
    for name, collector in collectors:
        try:
            facts[name] = collector(torch)
        except Exception as exc:  # noqa: BLE001 -- recorded; the probe carries on
            facts[name] = None
            facts["errors"].append({"name": name, "exc_type": type(exc).__name__,
                                    "message": str(exc)})
    return facts
