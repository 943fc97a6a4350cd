"""Resolve `--reference`: an interpreter, or an upstream wheel in a cached venv.

`wheel` means the upstream wheel of the target's torch version (local version label
and pre-release parts dropped: Debian's "1.13.0a0" -> "1.13.0"); `wheel==X.Y.Z` names
a version; a path ending in `.whl` installs that file.  Beside torch the venv gets
the matching torchvision (for the models suite, probe/suite_models), in a second pip
call whose failure keeps the venv without it (one log line).  Venvs are created once
under the cache folder and reused; nothing is installed into the target.
"""

import contextlib
import fcntl
import hashlib
import os
import re
import pathlib
import shutil
import subprocess
import sys
from typing import Callable, Iterator, Mapping, Optional, Sequence

from packaging.version import InvalidVersion, Version

from eb_torchperf.measure.environ import apply_overrides, path_under
from eb_torchperf.errors import ConfigError
from eb_torchperf.measure.isolation import isolated_environ
from eb_torchperf.measure.setup_run import run_setup
from eb_torchperf.probe.nocwd import code_argv

#: Written into a venv once pip succeeded; a venv without it is rebuilt.
READY_MARKER = ".eb_torchperf-ready"
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


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> pathlib.Path:
    """$EB_TORCHPERF_CACHE, else $XDG_CACHE_HOME/eb_torchperf, else ~/.cache/eb_torchperf.

    Args:
        environ: where to read the variables (the EasyBuild hook passes the environment
            `eb` started in: EasyBuild's Python easyblocks point XDG_CACHE_HOME into its
            temporary folder, which is removed after the installation).
    """
    if environ.get("EB_TORCHPERF_CACHE"):
        return pathlib.Path(environ["EB_TORCHPERF_CACHE"])
    home = environ.get("HOME") or os.path.expanduser("~")
    base = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
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


def expected_version(requirement: str) -> Optional[str]:
    """The torch version a requirement installs: `torch==X` -> X, a wheel file's name
    (`torch-2.13.0+cpu-cp311-...whl`) -> 2.13.0+cpu; None when it cannot tell."""
    if requirement.endswith(".whl"):
        parts = pathlib.Path(requirement).name.split("-")
        return parts[1] if len(parts) > 2 else None
    return requirement.partition("==")[2] or None


#: Run inside a venv's python: torch's version and file, on one line each.
_IMPORT_CHECK = "import torch, sys; sys.stdout.write(torch.__version__ + '\\n' + torch.__file__)"


def venv_problem(venv: pathlib.Path, expected: Optional[str],
                 env: Optional[Mapping[str, str]] = None, timeout_s: float = 300) -> Optional[str]:
    """Why the venv cannot serve as the reference, or None when `import torch` in it
    (isolated environment) gives `expected` (same base version) from inside the venv."""
    python = venv / "bin" / "python"
    if not python.exists():
        return "%s is missing" % python
    try:
        proc = subprocess.run(code_argv(str(python), _IMPORT_CHECK), capture_output=True,
                              text=True, timeout=timeout_s,
                              env=env if env is not None else isolated_environ())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "%s does not run: %s" % (python, exc)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        return "import torch fails: %s" % last
    version, _, torch_file = proc.stdout.strip().partition("\n")
    if not path_under(torch_file, venv):
        return "import torch gives %s from %s, outside the venv" % (version, torch_file)
    if expected and _base(version) != _base(expected):
        return "import torch gives %s, not %s" % (version, expected)
    return None


def _base(version: str) -> str:
    try:
        return Version(version).base_version
    except InvalidVersion:
        return version


@contextlib.contextmanager
def _cache_lock(venv: pathlib.Path, log: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive flock on `<venv>.lock` (two audits building one venv wait for
    each other instead of deleting each other's half-made venv)."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(str(venv) + ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("waiting for another eb-torchperf that builds %s" % venv)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_wheel_venv(requirement: str, pip_options: Sequence[str] = (),
                      cache_dir: Optional[pathlib.Path] = None,
                      python: str = sys.executable,
                      log: Callable[[str], None] = lambda msg: None,
                      env: Optional[Mapping[str, Optional[str]]] = None,
                      timeout_s: float = 300) -> str:
    """Create (once) a venv with `requirement` installed and return its python.

    venv and pip run without the target's Python path settings (isolation.
    isolated_environ): with a PyTorch module loaded, pip would otherwise find its torch
    "already satisfied" and install none.  A cached venv is used only when `import
    torch` in it gives the expected version from inside it; a broken one is rebuilt.

    Args:
        env: overrides for the reference's environment (the hook's "environment eb
            started in"), applied before the isolation.
        timeout_s: bounds `import torch` in a cached venv (the audit's --timeout).

    Raises:
        ConfigError: venv creation or pip failed (message has pip's last line), or the
            new venv's torch is not the requested one.
    """
    venv = venv_dir_for(requirement, pip_options, cache_dir or default_cache_dir(), python)
    venv_python = venv / "bin" / "python"
    clean = isolated_environ(os.environ, env)
    expected = expected_version(requirement)
    with _cache_lock(venv, log):
        if (venv / READY_MARKER).exists():
            problem = venv_problem(venv, expected, clean, timeout_s)
            if problem is None:
                if not (venv / TORCHVISION_MARKER).exists():  # made before torchvision came
                    add_torchvision(venv, requirement, pip_options, log, clean)
                return str(venv_python)
            log("cached reference venv %s is broken (%s): rebuilding it" % (venv, problem))
        shutil.rmtree(venv, ignore_errors=True)
        log("creating reference venv %s with %s (once; cached)" % (venv, requirement))
        try:
            run_setup([python, "-m", "venv", str(venv)], "python -m venv %s" % venv, clean)
            run_setup([str(venv_python), "-m", "pip", "install",
                       "--disable-pip-version-check", "--progress-bar", "off", requirement,
                       *pip_options], "pip install %s" % requirement, clean, log)
            problem = venv_problem(venv, expected, clean)
            if problem:
                raise ConfigError("reference venv %s: %s after pip install %s (check "
                                  "--pip-option / the index; the venv was removed)"
                                  % (venv, problem, requirement))
        except ConfigError:
            shutil.rmtree(venv, ignore_errors=True)  # no half-made venv left in the cache
            raise
        (venv / READY_MARKER).write_text(requirement + "\n")
        add_torchvision(venv, requirement, pip_options, log, clean)
    return str(venv_python)


def add_torchvision(venv: pathlib.Path, requirement: str, pip_options: Sequence[str] = (),
                    log: Callable[[str], None] = lambda msg: None,
                    env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """pip-install the torchvision matching the venv's torch (torch pinned); once.

    A failure keeps the venv as it is (the models needing torchvision are then skipped
    on the reference side) and is logged in one line; either way TORCHVISION_MARKER
    records the outcome, so the install is tried once per venv.

    Args:
        env: the environment pip runs in (the reference's, isolated from the target).

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
        run_setup([str(venv / "bin" / "python"), "-m", "pip", "install",
                   "--disable-pip-version-check", "-q", tv,
                   "torch==%s" % Version(version).base_version, *pip_options],
                  "pip install %s" % tv, env)
    except ConfigError as exc:
        marker.write_text("failed: %s\n" % exc)
        log("reference venv: %s; kept without torchvision (models needing it are skipped)"
            % exc)
        return None
    marker.write_text(tv + "\n")
    return tv


def target_torch_version(python: str, timeout_s: float = 180,
                         env: Optional[Mapping[str, Optional[str]]] = None) -> str:
    """`torch.__version__` of an interpreter, without the probe, in the target's
    environment (`env`: the --target-env overrides, {VAR: value or None}).

    Raises:
        ConfigError: the interpreter does not run or its torch does not import.
    """
    code = "import torch, sys; sys.stdout.write(torch.__version__)"
    try:
        proc = subprocess.run(code_argv(python, code), capture_output=True, text=True,
                              timeout=timeout_s, env=_with_overrides(env))
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


def _with_overrides(env: Optional[Mapping[str, Optional[str]]]) -> dict:
    return apply_overrides(os.environ, env)


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
                      build: bool = True, timeout_s: float = 180,
                      env: Optional[Mapping[str, Optional[str]]] = None,
                      target_env: Optional[Mapping[str, Optional[str]]] = None
                      ) -> Optional[str]:
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
        env: overrides for the reference environment, used while building a venv.
        target_env: the target's overrides (--target-env), used asking its version.

    Raises:
        ConfigError: unknown path, bad wheel spec, venv/pip failure.
    """
    if not spec or spec == "none":
        return None
    if is_wheel_spec(spec):
        version = (target_torch_version(target_python, timeout_s, target_env)
                   if spec == "wheel" and target_python else None)
        requirement = wheel_requirement(spec, version)
        if not build:
            return str(venv_dir_for(requirement, pip_options, cache_dir or default_cache_dir())
                       / "bin" / "python")
        return ensure_wheel_venv(requirement, pip_options, cache_dir, log=log, env=env,
                                 timeout_s=timeout_s)
    return resolve_interpreter(spec, "reference")


def resolve_interpreter(spec: str, label: str, hint: Optional[str] = None) -> str:
    """Path of an interpreter given as a path or a command on PATH.

    Args:
        hint: what to do instead, for the message (default: a python path; for the
            reference also `wheel`).

    Raises:
        ConfigError: not found or not executable.
    """
    path = shutil.which(spec) if os.sep not in spec else spec
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise ConfigError("%s interpreter %r not found or not executable (%s)" % (
            label, spec, hint or "give a path to a python, e.g. /usr/bin/python3%s" % (
                ", or 'wheel' for the upstream wheel" if label == "reference" else "")))
    return path
