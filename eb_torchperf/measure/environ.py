"""The environment of the audited interpreters: small rules every side follows alike,
each defined once, and the isolation of a side from the installing environment.

`apply_overrides`: a variable set to None is removed, any other value set (the worker
environment, the site check's sides, the isolation of the reference).  `path_under`:
whether a file lies in a folder once both are resolved (the audited torch under an
installation or a venv, a BLAS library under a remedy's folder, a Python path entry
under a target's prefix).  `own_site_overrides`, `without_root` and `env_diff` keep the
sides of a site check (EasyBuild hook, sanity-check) off eb_torchperf's own folder and
the installation's module environment.
"""

import os
from typing import Dict, Mapping, Optional


def apply_overrides(environ: Mapping[str, str],
                    overrides: Optional[Mapping[str, Optional[str]]]) -> Dict[str, str]:
    """A copy of `environ` with `overrides` applied (None: remove the variable)."""
    env = dict(environ)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def path_under(path: str, root: str) -> bool:
    """`path` is `root` or lies below it, symbolic links resolved ("" is under nothing)."""
    if not path or not root:
        return False
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def own_site_overrides(environ: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """Environment overrides that drop eb_torchperf's own folder from PYTHONPATH.

    When eb_torchperf comes from a module (`module load eb_torchperf`), its folder and
    dependencies (numpy, pandas) are on PYTHONPATH; the audited interpreters must not
    import them.  A folder that also holds `torch` is kept.

    Returns:
        {"PYTHONPATH": rest or None} when something is dropped, else {}.
    """
    # this file is eb_torchperf/measure/environ.py: three levels up is the folder that
    # holds the eb_torchperf package
    own = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    entries = [e for e in environ.get("PYTHONPATH", "").split(os.pathsep) if e]
    kept = [e for e in entries if os.path.realpath(e) != own
            or os.path.isdir(os.path.join(e, "torch"))]
    if len(kept) == len(entries):
        return {}
    return {"PYTHONPATH": os.pathsep.join(kept) or None}


def without_root(environ: Mapping[str, str], root: str) -> Dict[str, str]:
    """A copy of `environ` with every path entry under `root` dropped.

    Variables left empty (e.g. EBROOTPYTORCH=root) are removed: the reference must
    not import the installation under audit.
    """
    result = {}
    for key, value in environ.items():
        if root not in value:
            result[key] = value
            continue
        kept = [e for e in value.split(os.pathsep) if not path_under(e, root)]
        if any(kept):
            result[key] = os.pathsep.join(kept)
    return result


def env_diff(before: Mapping[str, str], after: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """Overrides that turn `after` back into `before` (None: remove the variable).

    Used to run the reference without the installation's module environment.
    """
    keys = set(before) | set(after)
    return {k: before.get(k) for k in sorted(keys) if before.get(k) != after.get(k)}

