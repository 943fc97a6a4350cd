"""Side-by-side build and runtime configuration rows (target vs reference).

One row list serves the terminal table, the Markdown and the HTML report.  Values
are display strings; "—" means the probe could not tell.
"""

import os
from typing import Callable, List, NamedTuple, Optional

from eb_torchperf.records.measurements import ProbeResult

MISSING = "—"


class ConfigRow(NamedTuple):
    """One line of the config diff: label, target value, reference value, differs."""

    label: str
    target: str
    reference: str
    differs: bool


def _cudnn(probe) -> str:
    """cuDNN version: the loaded library's (gpu facts) where a GPU was probed, else the
    build's CUDNN_VERSION setting, else the "CuDNN" line of torch's config text, which
    torch prints compactly (9.19.0 as "91.9")."""
    loaded = ((probe.facts or {}).get("gpu") or {}).get("cudnn") or {}
    version = loaded.get("runtime") if isinstance(loaded, dict) else None
    if isinstance(version, list) and version:
        return ".".join(str(v) for v in version)
    return probe.build.cudnn_build or probe.build.cudnn_runtime or MISSING


def _onoff(value: Optional[bool], detail: Optional[str] = None) -> str:
    if value is None:
        return MISSING
    return ("yes " + detail) if value and detail else ("yes" if value else "no")


def cpu_capability(probe: ProbeResult) -> Optional[str]:
    """Run-time CPU capability (`torch.backends.cpu.get_cpu_capability()`, torch >= 2.0),
    else the build's "CPU capability usage" line of `torch.__config__.show()`."""
    return probe.fact("torch", "cpu_capability") or probe.build.cpu_capability


def loaded_blas(probe: ProbeResult) -> List[str]:
    """Basenames of mapped BLAS/LAPACK/OpenMP/oneDNN libraries (from /proc/self/maps)."""
    libs = probe.fact("mapped_libraries", "libraries") or []
    return sorted({os.path.basename(p) for p in libs})


def _threads(probe: ProbeResult) -> str:
    intra = probe.fact("torch", "intra_op_threads")
    allowed = probe.fact("cpu", "allowed_cores")
    return "%s of %s allowed cores" % (intra, allowed) if intra is not None else MISSING


#: label -> getter(ProbeResult) -> display string.  Order is display order.
ROWS: List[tuple] = [
    ("torch", lambda p: p.fact("torch", "version") or MISSING),
    ("BLAS_INFO", lambda p: p.build.blas_info or MISSING),
    ("LAPACK_INFO", lambda p: p.build.lapack_info or MISSING),
    ("MKL", lambda p: _onoff(p.build.use_mkl, p.build.mkl_version)),
    ("oneDNN (USE_MKLDNN)", lambda p: _onoff(p.build.use_mkldnn, p.build.onednn_version)),
    ("oneDNN available at run time", lambda p: _onoff(p.fact("torch", "mkldnn_available"))),
    ("OpenMP", lambda p: _onoff(p.build.use_openmp, p.build.openmp_version)),
    ("ATen parallel backend", lambda p: p.parallel.get("backend") or MISSING),
    ("CPU capability", lambda p: cpu_capability(p) or MISSING),
    ("BUILD_TYPE", lambda p: p.build.build_type or MISSING),
    ("-O level", lambda p: ("-O" + p.build.opt_level) if p.build.opt_level else MISSING),
    ("-march / -mcpu", lambda p: p.build.march or p.build.mcpu or "none"),
    ("debug build", lambda p: _onoff(p.fact("torch", "debug"))),
    ("compiler", lambda p: " ".join(filter(None, (p.build.compiler, p.build.compiler_version)))
     or MISSING),
    ("USE_MPI", lambda p: _onoff(p.build.use_mpi)),
    ("CUDA", lambda p: _onoff(p.build.use_cuda, p.build.cuda_runtime)),
    ("NVCC archs", lambda p: " ".join(p.build.nvcc_archs) or MISSING),
    ("cuDNN", lambda p: _cudnn(p)),
    ("intra-op threads", _threads),
    ("inter-op threads", lambda p: str(p.fact("torch", "interop_threads", MISSING))),
    ("loaded BLAS/OpenMP/oneDNN", lambda p: ", ".join(loaded_blas(p)) or MISSING),
    ("python", lambda p: p.fact("python", "executable") or p.python),
    ("torch file", lambda p: p.fact("torch", "file") or MISSING),
    ("installed by", lambda p: p.fact("install", "kind") or MISSING),
    ("build fingerprint", lambda p: p.fact("torch", "fingerprint") or MISSING),
]


def config_rows(target: ProbeResult, reference: Optional[ProbeResult],
                rows: List[tuple] = ROWS) -> List[ConfigRow]:
    """The config diff; `reference` None gives "" reference values and no differences."""
    out = []
    for label, getter in rows:
        t_value = _safe(getter, target)
        r_value = _safe(getter, reference) if reference is not None else ""
        out.append(ConfigRow(label, t_value, r_value,
                             reference is not None and t_value != r_value))
    return out


def _safe(getter: Callable, probe: Optional[ProbeResult]) -> str:
    if probe is None:
        return MISSING
    value = getter(probe)
    return MISSING if value in (None, "") else str(value)
