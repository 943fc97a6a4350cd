"""Turn an easyconfig into `EasyconfigFacts` with easybuild-framework's own parser.

Values come from `EasyConfig` (templates resolved, dependencies finalised with the
subtoolchain EasyBuild picks); toolchain, FlexiBLAS and missing dependencies come from
`resolve.py`; line numbers from `lines.py`.  Two entry points:

- `parse_path(path, arch)`: the CLI and `lint_paths`; EasyBuild's output is captured and
  its warnings kept as facts.
- `facts_from_easyconfig(ec, arch)`: an `EasyConfig` EasyBuild already made (the hook).
  Inside a `parse_hook` EasyBuild has not parsed the dependencies yet; they are parsed
  here the same way (`EasyConfig._parse_dependency`), and templates that need values
  known only later stay unresolved in the evidence.
"""

import dataclasses
import importlib.metadata
import os
from typing import Dict, List, Optional, Tuple

from easybuild.framework.easyconfig.easyconfig import EasyConfig, get_easyblock_class
from easybuild.tools.build_log import EasyBuildError
from easybuild.tools.config import build_option

from eb_torchperf.errors import ConfigError
from eb_torchperf.lint import ebsetup
from eb_torchperf.lint.facts import Dependency, EasyconfigFacts
from eb_torchperf.lint.lines import dependency_lines, parameter_lines
from eb_torchperf.lint.resolve import (Resolver, flexiblas_facts, missing_dependencies,
                                       toolchain_facts)

#: EasyBuild error text -> (what it means for a linted file, keep EasyBuild's detail).
_ERROR_MEANINGS = (
    ("No easyblock found as neither name nor easyblock",
     "not an easyconfig (neither 'name' nor 'easyblock' is set)", False),
    ("mandatory parameters not provided", "not an easyconfig", True),
    ("Parsing easyconfig file failed:", "cannot parse", True),
    ("expected a valid path", "no such file", False),
)


class EasyconfigError(ConfigError):
    """A file that cannot be linted: not an easyconfig, a syntax error, unreadable.

    Attributes:
        path: the file.
        reason: one line saying what is wrong, based on EasyBuild's own message.
    """

    def __init__(self, path: str, reason: str):
        super().__init__("%s: %s" % (path, reason))
        self.path = path
        self.reason = reason


def describe_error(message: str) -> str:
    """One line for an EasyBuild parse error, prefixed with what it means."""
    text = ebsetup.one_line(message)
    for needle, meaning, keep_detail in _ERROR_MEANINGS:
        if needle in text:
            if not keep_detail:
                return meaning
            detail = text.split(needle, 1)[1] if needle.endswith(":") else text
            return "%s: %s" % (meaning, detail.strip())
    return text


def parse_path(path: str, arch: str, check_dependencies: bool = True,
               resolver: Optional[Resolver] = None) -> EasyconfigFacts:
    """Parse one easyconfig file for target `arch`.

    Args:
        path: easyconfig file.
        arch: target CPU architecture, e.g. "x86_64" (sets the ARCH constant).
        check_dependencies: look up every dependency's easyconfig in the robot path.
        resolver: shared lookups/parse cache (one per lint run); a new one when None.

    Returns:
        The facts, with EasyBuild's parse warnings.

    Raises:
        EasyconfigError: the file is missing, not an easyconfig, or does not parse.
    """
    if not os.path.isfile(path):
        raise EasyconfigError(path, "no such file")
    try:
        with ebsetup.target_arch(arch), ebsetup.captured_output() as output:
            ec = EasyConfig(path)
            facts = facts_from_easyconfig(ec, arch, check_dependencies, resolver)
    except EasyBuildError as err:
        raise EasyconfigError(path, describe_error(err.msg)) from None
    warnings = ebsetup.warnings_in(output.getvalue())
    return dataclasses.replace(facts, parse_warnings=warnings + facts.parse_warnings)


def facts_from_easyconfig(ec: EasyConfig, arch: str, check_dependencies: bool = False,
                          resolver: Optional[Resolver] = None) -> EasyconfigFacts:
    """Collect the facts the rules need from an EasyConfig instance.

    Args:
        ec: an EasyConfig made by EasyBuild (fully parsed, or inside a parse_hook).
        arch: target CPU architecture.
        check_dependencies: look up every dependency's easyconfig in the robot path.
        resolver: shared lookups/parse cache; a new one when None.

    Returns:
        EasyconfigFacts (parse_warnings holds notes on helper easyconfigs only).
    """
    resolver = resolver or Resolver()
    first_note = len(resolver.notes)
    rawtxt = ec.rawtxt or ""
    lines, dep_lines = parameter_lines(rawtxt), dependency_lines(rawtxt)
    dep_dicts = _dependency_dicts(ec)
    deps = tuple(_to_dependency(dep, dep_lines) for dep in dep_dicts)
    toolchain, tc_deps = toolchain_facts(ec, arch, resolver)
    flexiblas = flexiblas_facts(dep_dicts, tc_deps, toolchain.components, resolver)
    missing = ()
    if check_dependencies:
        missing = missing_dependencies(ec, dep_dicts, dep_lines, lines.get("toolchain"), resolver)
    easyblock = get_easyblock_class(ec.get("easyblock", None), name=ec.name).__name__
    wheel = _torch_wheel(ec)
    return EasyconfigFacts(
        path=ec.path or "", name=ec.name, version=str(ec.version), easyblock=easyblock,
        install_kind=_install_kind(ec.name, wheel, deps), arch=arch, toolchain=toolchain,
        dependencies=deps, flexiblas=flexiblas, torch_wheel=wheel, lines=lines,
        missing_dependencies=missing, parse_warnings=tuple(resolver.notes[first_note:]),
        easyblocks_version=_easyblocks_version(), **_parameters(ec))


def _dependency_dicts(ec: EasyConfig) -> List[dict]:
    """EasyBuild's dependency dicts (build dependencies first, filter-deps applied)."""
    if "parsed" in ec:
        return list(ec.dependencies())
    # Inside a parse_hook: EasyBuild parses the dependency tuples right after the hook.
    deps = []
    for key, build_only in (("builddependencies", True), ("dependencies", False)):
        for item in ec.get_ref(key) or []:
            # builddependencies may be a list of lists to iterate over; take them all.
            for dep in item if isinstance(item, list) else [item]:
                deps.append(dep if isinstance(dep, dict)
                            else ec._parse_dependency(dep, build_only=build_only))  # noqa: SLF001
    return deps


def _to_dependency(dep: dict, dep_lines: Dict[str, int]) -> Dependency:
    """A Dependency from one EasyBuild dependency dict."""
    toolchain = dep.get("toolchain") or {}
    return Dependency(name=dep["name"], version=str(dep["version"]),
                      versionsuffix=dep.get("versionsuffix") or "",
                      toolchain="%s/%s" % (toolchain.get("name"), toolchain.get("version")),
                      build_only=bool(dep.get("build_only")), line=dep_lines.get(dep["name"]))


def _parameters(ec: EasyConfig) -> dict:
    """Plain values of the easyconfig parameters and build options the rules read."""
    with ec.allow_unresolved_templates():
        toolchainopts = ec.get("toolchainopts", None) or {}
        eb_optarch = build_option("optarch", default=None)
        return {
            "versionsuffix": ec.get("versionsuffix", None) or "",
            "cuda_compute_capabilities": _strings(ec.get("cuda_compute_capabilities", None)),
            "eb_cuda_compute_capabilities": _strings(
                build_option("cuda_compute_capabilities", default=None)),
            "runtest": ec.get("runtest", None),
            "skipsteps": _strings(ec.get("skipsteps", None)),
            "max_failed_tests": ec.get("max_failed_tests", None),
            "optarch": toolchainopts.get("optarch"),
            "eb_optarch": None if eb_optarch is None else str(eb_optarch),
        }


def _strings(values) -> Tuple[str, ...]:
    """A list parameter as a tuple of strings (() for None)."""
    return tuple(str(value) for value in values or ())


def _torch_wheel(ec: EasyConfig) -> str:
    """File name of a torch wheel the easyconfig installs, "" when it installs none."""
    with ec.allow_unresolved_templates():
        candidates = list(ec.get("sources", None) or [])
        for ext in ec.get("exts_list", None) or []:
            if isinstance(ext, (tuple, list)) and ext and ext[0] == "torch":
                options = ext[2] if len(ext) > 2 and isinstance(ext[2], dict) else {}
                candidates += list(options.get("sources") or [])
                candidates += [options["source_tmpl"]] if "source_tmpl" in options else []
    names = [c.get("filename", "") if isinstance(c, dict) else str(c) for c in candidates]
    return next((n for n in names if n.endswith(".whl") and n.lower().startswith("torch-")), "")


def _install_kind(name: str, wheel: str, deps: Tuple[Dependency, ...]) -> str:
    """One of facts.INSTALL_KINDS."""
    if wheel:
        return "wheel"
    if name == "PyTorch":
        return "source"
    return "dependent" if any(dep.name == "PyTorch" for dep in deps) else "other"


def _easyblocks_version() -> str:
    """Installed easybuild-easyblocks version ("" when not installed)."""
    try:
        return importlib.metadata.version("easybuild-easyblocks")
    except importlib.metadata.PackageNotFoundError:
        return ""
