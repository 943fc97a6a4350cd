"""Resolve `--reference`: an interpreter, or an upstream wheel in a cached venv.

`wheel` means the upstream wheel of the target's torch version (local version label
and pre-release parts dropped: Debian's "1.13.0a0" -> "1.13.0"); `wheel==X.Y.Z` names
a version; a path ending in `.whl` installs that file.  Beside torch the venv gets
the matching torchvision (for the models suite, probe/suite_models), in a second pip
call whose failure keeps the venv without it (one log line).  Venvs are created once
under the cache folder and reused; nothing is installed into the target.
"""

import hashlib
import os
import re
import pathlib
import shutil
import subprocess
import sys
from typing import Callable, Optional, Sequence

from packaging.version import InvalidVersion, Version

from eb_torchperf.errors import ConfigError

#: Written into a venv once pip succeeded; a venv without it is rebuilt.
READY_MARKER = ".eb_torchperf-ready"
PIP_TIMEOUT_S = 3600
#: Written after the torchvision install was tried: "torchvision==X" or "failed: why".
TORCHVISION_MARKER = ".eb_torchperf-torchvision"
#: torch release (major, minor) -> torchvision minor, from torchvision's compatibility
#: table (https://github.com/pytorch/vision#installation): 1.x -> 0.(x+1), 2.x -> 0.(x+15).
TORCHVISION_MINOR = {(1, 12): 13, (1, 13): 14, (2, 9): 24, (2, 11): 26, (2, 13): 28,
                     (2, 14): 29}


def torchvision_requirement(torch_version: str) -> Optional[str]:
    """The pip requirement of the torchvision matching torch `torch_version`.

    Known releases come from TORCHVISION_MINOR, others from its rule; the patch level
    follows torch's (torch 2.5.1 -> torchvision 0.20.1, each pins its torch exactly).

    Returns:
        e.g. "torchvision==0.28.0" for "2.13.0"; None for a version before 1.12 or
        one that does not parse.
    """
    try:
        version = Version(torch_version)
    except InvalidVersion:
        return None
    major, minor, micro = (tuple(version.release) + (0, 0))[:3]
    if (major, minor) in TORCHVISION_MINOR:
        tv_minor = TORCHVISION_MINOR[(major, minor)]
    elif major == 2:
        tv_minor = minor + 15
    elif major == 1 and minor >= 12:
        tv_minor = minor + 1
    else:
        return None
    return "torchvision==0.%d.%d" % (tv_minor, micro)


def _requirement_version(requirement: str) -> Optional[str]:
    """Torch version of "torch==X" or of a wheel file name "torch-X-...whl"."""
    match = re.match(r"^torch==(.+)$", requirement) or re.match(
        r"^torch-([^-]+)-", pathlib.Path(requirement).name)
    return match.group(1) if match else None


def default_cache_dir() -> pathlib.Path:
    """$EB_TORCHPERF_CACHE, else $XDG_CACHE_HOME/eb_torchperf, else ~/.cache/eb_torchperf."""
    if os.environ.get("EB_TORCHPERF_CACHE"):
        return pathlib.Path(os.environ["EB_TORCHPERF_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "eb_torchperf"


def wheel_requirement(spec: str, target_version: Optional[str]) -> str:
    """The pip requirement for a `wheel` / `wheel==X` / `*.whl` spec.

    Raises:
        ConfigError: bad version, or `wheel` without a known target version.
    """
    if spec.endswith(".whl"):
        path = pathlib.Path(spec).expanduser().resolve()
        if not path.is_file():
            raise ConfigError("reference wheel file %s does not exist" % spec)
        return str(path)
    version = spec.partition("==")[2] if "==" in spec else target_version
    if not version:
        raise ConfigError("--reference wheel needs the target's torch version; give "
                          "--reference wheel==X.Y.Z")
    try:
        return "torch==%s" % Version(version).base_version
    except InvalidVersion:
        raise ConfigError("--reference %s: %r is not a valid version" % (spec, version)) from None


def venv_dir_for(requirement: str, pip_options: Sequence[str], cache_dir: pathlib.Path,
                 python: str = sys.executable) -> pathlib.Path:
    """Cache folder of the venv for this requirement, pip options and base Python."""
    tag = "%s|%s|%s" % (requirement, " ".join(pip_options), os.path.realpath(python))
    digest = hashlib.sha256(tag.encode()).hexdigest()[:10]
    name = pathlib.Path(requirement).name if requirement.endswith(".whl") else requirement
    return cache_dir / "reference" / ("%s-%s" % (name.replace("==", "-"), digest))


def ensure_wheel_venv(requirement: str, pip_options: Sequence[str] = (),
                      cache_dir: Optional[pathlib.Path] = None,
                      python: str = sys.executable,
                      log: Callable[[str], None] = lambda msg: None) -> str:
    """Create (once) a venv with `requirement` installed and return its python.

    Raises:
        ConfigError: venv creation or pip failed (message has pip's last line).
    """
    venv = venv_dir_for(requirement, pip_options, cache_dir or default_cache_dir(), python)
    venv_python = venv / "bin" / "python"
    if (venv / READY_MARKER).exists() and venv_python.exists():
        if not (venv / TORCHVISION_MARKER).exists():  # a venv made before torchvision came
            add_torchvision(venv, requirement, pip_options, log)
        return str(venv_python)
    shutil.rmtree(venv, ignore_errors=True)
    log("creating reference venv %s with %s (once; cached)" % (venv, requirement))
    try:
        _run([python, "-m", "venv", str(venv)], "python -m venv %s" % venv)
        _run([str(venv_python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
              requirement, *pip_options], "pip install %s" % requirement)
    except ConfigError:
        shutil.rmtree(venv, ignore_errors=True)  # no half-made venv left in the cache
        raise
    (venv / READY_MARKER).write_text(requirement + "\n")
    add_torchvision(venv, requirement, pip_options, log)
    return str(venv_python)


def add_torchvision(venv: pathlib.Path, requirement: str, pip_options: Sequence[str] = (),
                    log: Callable[[str], None] = lambda msg: None) -> Optional[str]:
    """pip-install the torchvision matching the venv's torch (torch pinned); once.

    A failure keeps the venv as it is (the models needing torchvision are then skipped
    on the reference side) and is logged in one line; either way TORCHVISION_MARKER
    records the outcome, so the install is tried once per venv.

    Returns:
        the torchvision requirement installed, or None.
    """
    version = _requirement_version(requirement)
    tv = torchvision_requirement(version) if version else None
    marker = venv / TORCHVISION_MARKER
    if tv is None:
        marker.write_text("failed: no torchvision known for %s\n" % requirement)
        log("reference venv: no torchvision known for %s; models needing it are skipped"
            % requirement)
        return None
    try:
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
              "-q", tv, "torch==%s" % Version(version).base_version, *pip_options],
             "pip install %s" % tv)
    except ConfigError as exc:
        marker.write_text("failed: %s\n" % exc)
        log("reference venv: %s; kept without torchvision (models needing it are skipped)"
            % exc)
        return None
    marker.write_text(tv + "\n")
    return tv


#: pip output lines that carry the cause of a failed install (pip prints the cause
#: of a resolution failure above its final "ERROR: ResolutionImpossible" line).
_PIP_CAUSE = ("ERROR", "requested", "conflict", "No matching distribution")


def _run(argv: Sequence[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError("%s failed: %s" % (what, exc)) from None
    if proc.returncode != 0:
        lines = [l.strip() for l in (proc.stderr + proc.stdout).splitlines() if l.strip()]
        causes = [l for l in lines if any(word in l for word in _PIP_CAUSE)] or lines[-1:]
        raise ConfigError("%s failed (exit %d): %s" % (what, proc.returncode,
                                                       " | ".join(causes[:4]) or "no output"))


def target_torch_version(python: str, timeout_s: float = 180) -> str:
    """`torch.__version__` of an interpreter, without the probe.

    Raises:
        ConfigError: the interpreter does not run or its torch does not import.
    """
    code = "import torch, sys; sys.stdout.write(torch.__version__)"
    try:
        proc = subprocess.run([python, "-s", "-c", code], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ConfigError("target %s: `import torch` gave no answer within %g s (raise "
                          "--timeout if the build is just very slow)" % (python, timeout_s)) \
            from None
    except OSError as exc:
        raise ConfigError("target %s: cannot run: %s" % (python, exc)) from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        raise ConfigError("target %s: torch does not import: %s" % (python, last))
    return proc.stdout.strip()


def is_wheel_spec(spec: str) -> bool:
    """Whether a reference spec names an upstream wheel: wheel, wheel==X.Y.Z, FILE.whl."""
    return spec == "wheel" or spec.startswith("wheel==") or spec.endswith(".whl")


def check_reference_spec(spec: Optional[str]) -> None:
    """Check a `--reference` value without running anything (no process, no pip).

    `wheel` passes (its version is the target's, asked later); `wheel==X` must name a
    valid version, FILE.whl an existing file, anything else an interpreter.

    Raises:
        ConfigError: as resolve_reference would, for what can be told without a process.
    """
    if not spec or spec == "none" or spec == "wheel":
        return
    if is_wheel_spec(spec):
        wheel_requirement(spec, None)
    else:
        resolve_interpreter(spec, "reference")


def resolve_reference(spec: Optional[str], target_python: Optional[str],
                      pip_options: Sequence[str] = (),
                      cache_dir: Optional[pathlib.Path] = None,
                      log: Callable[[str], None] = lambda msg: None,
                      build: bool = True, timeout_s: float = 180) -> Optional[str]:
    """Turn a `--reference` value into an interpreter path (None: no reference).

    The one reference resolver: `audit`, `explain`, `sanity-check`, the EasyBuild hook
    (through workflows.pipeline) and `fleet` use it.

    Args:
        spec: interpreter path or command, wheel, wheel==X.Y.Z, FILE.whl, none.
        target_python: the target, asked for its torch version by a bare `wheel`;
            None where it cannot be run here (then `wheel` is refused).
        build: create the wheel venv when missing; False gives the interpreter path
            it will have (fleet --dry-run).
        timeout_s: bounds asking the target for its torch version (`wheel`): the
            audit's --timeout, so a hanging `import torch` is not waited for longer
            than the workers.

    Raises:
        ConfigError: unknown path, bad wheel spec, venv/pip failure.
    """
    if not spec or spec == "none":
        return None
    if is_wheel_spec(spec):
        version = (target_torch_version(target_python, timeout_s)
                   if spec == "wheel" and target_python else None)
        requirement = wheel_requirement(spec, version)
        if not build:
            return str(venv_dir_for(requirement, pip_options, cache_dir or default_cache_dir())
                       / "bin" / "python")
        return ensure_wheel_venv(requirement, pip_options, cache_dir, log=log)
    return resolve_interpreter(spec, "reference")


def resolve_interpreter(spec: str, label: str) -> str:
    """Path of an interpreter given as a path or a command on PATH.

    Raises:
        ConfigError: not found or not executable.
    """
    path = shutil.which(spec) if os.sep not in spec else spec
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise ConfigError("%s interpreter %r not found or not executable (give a path to a "
                          "python, e.g. /usr/bin/python3, or 'wheel' for a reference)" % (label, spec))
    return path
