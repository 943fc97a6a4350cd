"""Collect the source files an easyconfig names (`eb-torchperf sources`, cli/sources.py).

See the command's description there; this module holds the EasyBuild-parser side.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, List, Optional, Sequence

from eb_torchperf.errors import ConfigError

PIP_TIMEOUT_S = 1800


#: The parameters `source_files` reads.
_PARAMETERS = ("name", "version", "sources", "exts_list", "exts_default_options")
#: The file name ending of a source distribution (PEP 625).
SDIST = ".tar.gz"


def _raw_config(path: str) -> dict:
    """The parameters `source_files` reads (_PARAMETERS), as EasyBuild's own parser gives
    them (constants such as PYPI_SOURCE resolved, templates not), parsed in the lint
    sandbox: the easyconfig is code (lint/sandbox.py).

    Raises:
        ConfigError: the file is missing or cannot be parsed, or the sandbox cannot start.
    """
    from eb_torchperf.lint.sandbox import parse_files
    if not os.path.isfile(path):
        raise ConfigError("easyconfig %s does not exist" % path)
    if importlib.util.find_spec("easybuild") is None:
        raise ConfigError("eb-torchperf sources needs EasyBuild to read easyconfigs (pip "
                          "install 'eb_torchperf[easybuild]', or load an EasyBuild module)")
    reply = parse_files([path], mode="raw", parameters=_PARAMETERS)[0]
    config = reply.get("config")
    if not isinstance(config, dict) or not isinstance(config.get("name"), str) \
            or not isinstance(config.get("version"), str):
        raise ConfigError(reply.get("problem") or "cannot parse %s: no name and version"
                          % path)
    return config


def _fill(template: str, name: str, version: str) -> str:
    try:
        return template % {"name": name, "version": version, "namelower": name.lower()}
    except (KeyError, ValueError) as exc:
        raise ConfigError("cannot fill the source template %r: %s" % (template, exc)) from None


def source_files(path: str) -> List[str]:
    """File names the easyconfig at `path` makes EasyBuild look for, in its order.

    Raises:
        ConfigError: the easyconfig cannot be parsed, or its sources are not lists of
            names (the values come from the sandbox: untrusted).
    """
    config = _raw_config(path)
    try:
        return _names(config)
    except (TypeError, AttributeError, IndexError, KeyError) as exc:
        raise ConfigError("cannot read the sources of %s: %s: %s"
                          % (path, type(exc).__name__, exc)) from None


def _names(config: dict) -> List[str]:
    name, version = config["name"], config["version"]
    files = []
    for source in config.get("sources") or []:
        filename = source.get("filename") if isinstance(source, dict) else source
        files.append(_fill(str(filename), name, version))
    default_tmpl = (config.get("exts_default_options") or {}).get("source_tmpl",
                                                                  "%(name)s-%(version)s.tar.gz")
    for ext in config.get("exts_list") or []:
        if isinstance(ext, str):
            continue  # a module shipped with its parent: no file of its own
        ext_name, ext_version = ext[0], ext[1]
        options = ext[2] if len(ext) > 2 else {}
        files.append(_fill(options.get("source_tmpl", default_tmpl), ext_name, ext_version))
    return list(dict.fromkeys(files))


def wheel_requirement(filename: str) -> str:
    """`name==version` of a wheel file name (PEP 427: name-version-...-tags.whl) or of an
    sdist (PEP 625: name-version.tar.gz).

    Raises:
        ConfigError: neither a wheel nor an sdist file name.
    """
    if filename.endswith(SDIST):
        parts = filename[:-len(SDIST)].rsplit("-", 1)
        if len(parts) == 2 and all(parts):
            return "%s==%s" % tuple(parts)
    parts = filename[:-len(".whl")].split("-") if filename.endswith(".whl") else []
    if len(parts) < 5:
        raise ConfigError("%s is not a wheel or sdist: put it into the folder by hand"
                          % filename)
    return "%s==%s" % (parts[0], parts[1])


def pip_python() -> str:
    """The interpreter whose pip downloads: this one when it has pip, else the first
    python3 on PATH (the eb_torchperf module's own venv is made without pip)."""
    if importlib.util.find_spec("pip") is not None:
        return sys.executable
    return shutil.which("python3") or sys.executable


def collect(files: Sequence[str], dest: str, from_dirs: Sequence[str] = (),
            pip_options: Sequence[str] = (), python: Optional[str] = None,
            log: Callable[[str], None] = lambda msg: None) -> List[str]:
    """Bring every file into `dest`; returns the files that could not be had (pip
    downloads with `python`, default pip_python())."""
    python = python or pip_python()
    os.makedirs(dest, exist_ok=True)
    missing = []
    for filename in files:
        target = os.path.join(dest, filename)
        if os.path.isfile(target):
            log("%s: already there" % filename)
            continue
        found = next((os.path.join(d, filename) for d in from_dirs
                      if os.path.isfile(os.path.join(d, filename))), None)
        if found:
            shutil.copyfile(found, target)
            log("%s: copied from %s" % (filename, os.path.dirname(found)))
            continue
        problem = _download(filename, dest, pip_options, python)
        if problem:
            missing.append("%s (%s)" % (filename, problem))
        else:
            log("%s: downloaded" % filename)
    return missing


def _download(filename: str, dest: str, pip_options: Sequence[str], python: str):
    """pip download one wheel or sdist into `dest`; None on success, else why not."""
    try:
        requirement = wheel_requirement(filename)
    except ConfigError as exc:
        return str(exc)
    with tempfile.TemporaryDirectory(prefix="eb_torchperf-sources-") as tmp:
        argv = [python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                "--progress-bar", "off", "-d", tmp, requirement, *pip_options]
        if filename.endswith(SDIST):
            argv[4:4] = ["--no-binary", ":all:"]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return "pip download failed: %s" % exc
        if proc.returncode != 0:
            lines = [l for l in proc.stderr.splitlines() if l.startswith("ERROR")]
            return "pip download %s: %s" % (requirement, (lines or ["exit %d" % proc.returncode])[0])
        if not os.path.isfile(os.path.join(tmp, filename)):
            got = ", ".join(sorted(os.listdir(tmp))) or "nothing"
            return "pip download %s gave %s" % (requirement, got)
        shutil.move(os.path.join(tmp, filename), os.path.join(dest, filename))
    return None
