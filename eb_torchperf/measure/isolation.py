"""Keep the reference apart from the target: its environment, and a same-torch check.

A loaded PyTorch module (EasyBuild, Lmod) puts its torch on `PYTHONPATH` /
`EBPYTHONPREFIXES`; a reference interpreter started with that environment imports the
module's torch too, and the audit compares the target with itself (issue 13: both
sides showed the same `torch/__init__.py`, verdict OK).  So by default the reference,
and pip while it builds a reference venv, run without the target's Python path
settings and without the library folders of the target's installation;
`--keep-reference-env` keeps them, `--reference-env VAR=VALUE` sets single variables.

After the first worker pair has reported its facts, `same_torch_problem` tells
whether both sides load one torch (same real path of `torch/__init__.py`, or the same
build fingerprint: version, git version and a hash of `torch.__config__.show()`);
the audit then stops before measuring unless `--allow-same-torch` (an A/A run) was
given.
"""

import os
from typing import Dict, Mapping, Optional

from eb_torchperf.measure.environ import apply_overrides, path_under  # noqa: F401
from eb_torchperf.records.measurements import ProbeResult

#: Variables that decide which Python packages an interpreter imports.
PYTHON_PATH_VARS = ("PYTHONPATH", "EBPYTHONPREFIXES", "PYTHONHOME", "PYTHONSTARTUP",
                    "PYTHONUSERBASE")
#: Variables of the target's own EasyBuild module (the probe reads EBROOTPYTORCH to tell
#: how a torch was installed; the reference must not claim the module's root).
TARGET_MODULE_VARS = ("EBROOTPYTORCH", "EBVERSIONPYTORCH", "EBDEVELPYTORCH")
#: Library search paths from which entries of the target's installation are dropped.
LIBRARY_PATH_VARS = ("LD_LIBRARY_PATH",)


def _install_root(entry: str) -> Optional[str]:
    """Installation folder of a PYTHONPATH entry that holds torch
    (`<root>/lib/python3.11/site-packages` -> `<root>`), else None."""
    if not entry or not os.path.isdir(os.path.join(entry, "torch")):
        return None
    parts = os.path.realpath(entry).split(os.sep)
    for index in range(len(parts) - 1, 0, -1):
        if parts[index] in ("lib", "lib64") and index + 1 < len(parts) \
                and parts[index + 1].startswith("python"):
            return os.sep.join(parts[:index]) or os.sep
    return os.path.realpath(entry)


def target_roots(environ: Mapping[str, str]) -> list:
    """Folders of the target's torch installation named by the environment:
    $EBROOTPYTORCH, the roots of PYTHONPATH entries holding torch, and EBPYTHONPREFIXES
    entries holding torch somewhere under lib/python*/site-packages."""
    roots = []
    if environ.get("EBROOTPYTORCH"):
        roots.append(os.path.realpath(environ["EBROOTPYTORCH"]))
    for entry in environ.get("PYTHONPATH", "").split(os.pathsep):
        root = _install_root(entry)
        if root:
            roots.append(root)
    for prefix in environ.get("EBPYTHONPREFIXES", "").split(os.pathsep):
        lib = os.path.join(prefix, "lib")
        if prefix and os.path.isdir(lib) and any(
                os.path.isdir(os.path.join(lib, d, "site-packages", "torch"))
                for d in os.listdir(lib) if d.startswith("python")):
            roots.append(os.path.realpath(prefix))
    return list(dict.fromkeys(roots))


def _under(path: str, roots) -> bool:
    return any(path_under(path, root) for root in roots)


def isolating_overrides(environ: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """Overrides (None: remove) that take the target's Python path settings, module
    variables and library folders out of `environ`, for the reference side.

    Args:
        environ: the environment the reference would otherwise get (os.environ with
            any overrides already applied).
    """
    roots = target_roots(environ)
    overrides: Dict[str, Optional[str]] = {
        name: None for name in PYTHON_PATH_VARS + TARGET_MODULE_VARS if name in environ}
    for name in LIBRARY_PATH_VARS:
        entries = [e for e in environ.get(name, "").split(os.pathsep) if e]
        kept = [e for e in entries if not _under(e, roots)]
        if len(kept) != len(entries):
            overrides[name] = os.pathsep.join(kept) or None
    return overrides




def reference_overrides(base: Optional[Mapping[str, Optional[str]]] = None,
                        extra: Optional[Mapping[str, Optional[str]]] = None,
                        keep: bool = False,
                        environ: Mapping[str, str] = os.environ) -> Dict[str, Optional[str]]:
    """The reference side's environment overrides.

    Args:
        base: overrides already decided (the hook's "environment eb started in").
        extra: the user's `--reference-env` settings, applied last.
        keep: `--keep-reference-env`: no isolation, only `base` and `extra`.
        environ: the current environment.
    """
    merged = dict(base or {})
    if not keep:
        merged.update(isolating_overrides(apply_overrides(environ, merged)))
    merged.update(extra or {})
    return merged


def isolated_environ(environ: Mapping[str, str] = os.environ,
                     overrides: Optional[Mapping[str, Optional[str]]] = None) -> Dict[str, str]:
    """The environment for building a reference venv: `environ` with `overrides`, then
    without the target's Python path settings (pip must not see the target's torch)."""
    env = apply_overrides(environ, overrides)
    return apply_overrides(env, isolating_overrides(env))


def torch_identity(probe: Optional[ProbeResult]) -> Dict[str, Optional[str]]:
    """{"file": real path of torch/__init__.py, "fingerprint": build fingerprint} of a
    side (None where the probe did not record it; older probes lack `file_realpath`)."""
    if probe is None:
        return {"file": None, "fingerprint": None}
    path = probe.fact("torch", "file_realpath") or probe.fact("torch", "file")
    return {"file": os.path.realpath(path) if path else None,
            "fingerprint": probe.fact("torch", "fingerprint")}


def same_torch_problem(target: Optional[ProbeResult],
                       reference: Optional[ProbeResult]) -> Optional[str]:
    """Why the two sides count as one torch installation, or None.

    Same real path of torch/__init__.py, or the same build fingerprint (a copy of one
    build: an A/A comparison, never an audit of a build against the wheel).
    """
    if target is None or reference is None:
        return None
    mine, theirs = torch_identity(target), torch_identity(reference)
    if mine["file"] and mine["file"] == theirs["file"]:
        return "both sides import the same torch (%s)" % mine["file"]
    if mine["fingerprint"] and mine["fingerprint"] == theirs["fingerprint"]:
        return ("both sides run the same torch build (fingerprint %s: torch %s; files %s "
                "and %s)" % (mine["fingerprint"], target.fact("torch", "version"),
                             mine["file"], theirs["file"]))
    return None


SAME_TORCH_HINT = ("the reference must be another torch installation; if the target's "
                   "module settings leak into it, see --reference-env; for an A/A run of "
                   "one build give --allow-same-torch")
