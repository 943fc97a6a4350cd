"""Resolve what an easyconfig pulls in through other easyconfigs in the robot path.

The toolchain (e.g. foss/2025a brings FlexiBLAS, intel/2025a brings imkl), the FlexiBLAS
default backend and whether each dependency has an easyconfig at all are decided by
other easyconfig files.  They are found with EasyBuild's robot search
(`robot_find_easyconfig`, `det_full_ec_version`) and read with its parser; the toolchain
class (`ec.toolchain`, found by `search_toolchain`) supplies component names when the
toolchain easyconfig is not available.
"""

from typing import Dict, List, Optional, Tuple

from easybuild.framework.easyconfig.easyconfig import EasyConfig, robot_find_easyconfig
from easybuild.tools.build_log import EasyBuildError
from easybuild.tools import systemtools
from easybuild.tools.module_naming_scheme.utilities import det_full_ec_version
from easybuild.tools.toolchain.toolchain import is_system_toolchain

from eb_torchperf.lint import ebsetup
from eb_torchperf.lint.facts import Dependency, FlexiBLASFacts, ToolchainFacts

#: Toolchain class constants naming the software a toolchain loads
#: (easybuild/tools/toolchain/*.py, easybuild/toolchains/linalg/*.py).
TOOLCHAIN_COMPONENT_CONSTANTS = (
    "COMPILER_MODULE_NAME", "MPI_MODULE_NAME", "BLAS_MODULE_NAME", "LAPACK_MODULE_NAME",
    "SCALAPACK_MODULE_NAME", "BLACS_MODULE_NAME", "FFT_MODULE_NAME",
)
#: ARCH constant value -> (systemtools architecture, CPU family or None for any), the keys
#: of the compilers' COMPILER_OPTIMAL_ARCHITECTURE_OPTION.
SYSTEMTOOLS_ARCH = {
    "x86_64": (systemtools.X86_64, None),
    "aarch64": (systemtools.AARCH64, None),
    "ppc64le": (systemtools.POWER, systemtools.POWER_LE),
    "riscv64": (systemtools.RISCV64, None),
}
#: Toolchain whose imkl version is offered as a starting point (same generation).
INTEL_TOOLCHAIN = "intel"


class Resolver:
    """Finds and reads helper easyconfigs, each file at most once per Resolver.

    Attributes:
        notes: one line per request for a helper easyconfig that could not be read;
            `parse` reports the notes added while linting a file as its parse warnings.
    """

    def __init__(self):
        self._parsed: Dict[str, Optional[EasyConfig]] = {}
        self._failures: Dict[str, str] = {}
        self.notes: List[str] = []

    def find(self, name: str, full_version: str) -> Optional[str]:
        """Path of the easyconfig for `name` and full version (e.g. "3.4.5-GCC-14.2.0")."""
        return robot_find_easyconfig(name, full_version)

    def read(self, path: str) -> Optional[EasyConfig]:
        """Parse `path` quietly; None, and a note each time it is asked for, when it fails."""
        if path not in self._parsed:
            try:
                with ebsetup.captured_output():
                    self._parsed[path] = EasyConfig(path)
                    self._failures.pop(path, None)
            except EasyBuildError as err:
                self._failures[path] = "could not read %s: %s" % (path, ebsetup.one_line(err.msg))
                self._parsed[path] = None
        if path in self._failures:
            self.notes.append(self._failures[path])
        return self._parsed[path]

    def find_dependency(self, dep: dict) -> Optional[str]:
        """Easyconfig path for an EasyBuild dependency dict, None when not found."""
        return self.find(dep["name"], det_full_ec_version(dep))


def _class_components(toolchain) -> Tuple[str, ...]:
    """Component names declared by the toolchain class's *_MODULE_NAME constants."""
    names: List[str] = []
    for constant in TOOLCHAIN_COMPONENT_CONSTANTS:
        for name in getattr(toolchain, constant, None) or ():
            if name not in names:
                names.append(name)
    return tuple(names)


def _native_flag(toolchain, arch: str) -> Optional[str]:
    """The flag the toolchain's compiler uses for optarch by default on `arch`."""
    options = getattr(toolchain, "COMPILER_OPTIMAL_ARCHITECTURE_OPTION", None) or {}
    eb_arch, family = SYSTEMTOOLS_ARCH.get(arch, (arch, None))
    flags = sorted({flag for (flag_arch, flag_family), flag in options.items()
                    if flag_arch == eb_arch and family in (None, flag_family)})
    return " / ".join(flags) if flags else None


def toolchain_facts(ec: EasyConfig, arch: str, resolver: Resolver
                    ) -> Tuple[ToolchainFacts, List[dict]]:
    """Resolve the easyconfig's toolchain.

    Args:
        ec: parsed easyconfig.
        arch: target architecture (selects the default optarch flag).
        resolver: robot lookups and parse cache.

    Returns:
        (facts, dependency dicts of the toolchain easyconfig, [] when not found).
    """
    toolchain = ec.toolchain
    name, version = toolchain.name, toolchain.version
    if is_system_toolchain(name):
        return ToolchainFacts(name=name, version=version, components_source="system toolchain"), []
    tc_path = resolver.find(name, version)
    tc_ec = resolver.read(tc_path) if tc_path else None
    tc_deps = list(tc_ec.dependencies()) if tc_ec is not None else []
    if tc_ec is not None:
        components = tuple(dep["name"] for dep in tc_deps)
        versions = {dep["name"]: dep["version"] for dep in tc_deps}
        source = tc_path
    else:
        components, versions = _class_components(toolchain), {}
        source = "toolchain class %s (no %s-%s easyconfig found)" % (
            type(toolchain).__name__, name, version)
    facts = ToolchainFacts(name=name, version=version, components=components,
                           components_source=source, component_versions=versions,
                           native_flag=_native_flag(toolchain, arch),
                           imkl_hint=_imkl_hint(version, resolver))
    return facts, tc_deps


def _imkl_hint(version: str, resolver: Resolver) -> Optional[str]:
    """imkl version in the intel toolchain easyconfig of the same version, if any."""
    path = resolver.find(INTEL_TOOLCHAIN, version)
    intel = resolver.read(path) if path else None
    if intel is None:
        return None
    return next((dep["version"] for dep in intel.dependencies() if dep["name"] == "imkl"), None)


def flexiblas_facts(deps: List[dict], tc_deps: List[dict], tc_components: Tuple[str, ...],
                    resolver: Resolver) -> Optional[FlexiBLASFacts]:
    """The FlexiBLAS in play and its default backend.

    Args:
        deps: the easyconfig's own (build)dependency dicts.
        tc_deps: dependency dicts of the toolchain easyconfig.
        tc_components: toolchain component names (from easyconfig or class).
        resolver: robot lookups and parse cache.

    Returns:
        FlexiBLASFacts, or None when neither the easyconfig nor its toolchain uses FlexiBLAS.
    """
    dep = next((d for d in list(deps) + list(tc_deps) if d["name"] == "FlexiBLAS"), None)
    if dep is None:
        return FlexiBLASFacts(version="") if "FlexiBLAS" in tc_components else None
    path = resolver.find_dependency(dep)
    fb_ec = resolver.read(path) if path else None
    backend = default_backend(fb_ec) if fb_ec is not None else None
    return FlexiBLASFacts(version=dep["version"], default_backend=backend, easyconfig=path or "")


def default_backend(fb_ec: EasyConfig) -> Optional[str]:
    """FlexiBLAS default backend as the FlexiBLAS easyblock chooses it.

    `flexiblas_default` if set, else the first of `backends` (imkl dropped unless it is a
    dependency), else the first runtime dependency (easyblocks/f/flexiblas.py).  For the
    Bundle-style FlexiBLAS easyconfigs the options sit in the FlexiBLAS component.
    """
    options = {}
    with fb_ec.allow_unresolved_templates():
        for component in fb_ec.get("components", None) or []:
            if component[0] == "FlexiBLAS" and len(component) > 2:
                options = component[2]
        chosen = options.get("flexiblas_default") or fb_ec.get("flexiblas_default", None)
        backends = list(options.get("backends") or fb_ec.get("backends", None) or [])
    if chosen:
        return chosen
    dep_names = [dep["name"] for dep in fb_ec.dependencies()]
    backends = [b for b in backends if b != "imkl" or "imkl" in dep_names]
    if backends:
        return backends[0]
    runtime = [dep["name"] for dep in fb_ec.dependencies() if not dep.get("build_only")]
    return runtime[0] if runtime else None


def missing_dependencies(ec: EasyConfig, deps: List[dict], dep_lines: Dict[str, int],
                         toolchain_line: Optional[int], resolver: Resolver
                         ) -> Tuple[Dependency, ...]:
    """Dependencies (and the toolchain) with no easyconfig in the robot path.

    External modules and the system toolchain need no easyconfig and are skipped.

    Args:
        ec: parsed easyconfig.
        deps: its dependency dicts.
        dep_lines: dependency name -> line in the file.
        toolchain_line: line of the `toolchain` parameter.
        resolver: robot lookups.

    Returns:
        One Dependency per missing easyconfig, the toolchain first.
    """
    missing = []
    toolchain = ec.toolchain
    if not is_system_toolchain(toolchain.name) and not resolver.find(toolchain.name,
                                                                     toolchain.version):
        missing.append(Dependency(toolchain.name, toolchain.version, toolchain="system/system",
                                  line=toolchain_line))
    for dep in deps:
        if dep.get("external_module") or resolver.find_dependency(dep):
            continue
        missing.append(Dependency(dep["name"], str(dep["version"]), dep.get("versionsuffix") or "",
                                  "%(name)s/%(version)s" % dep["toolchain"],
                                  bool(dep.get("build_only")), dep_lines.get(dep["name"])))
    return tuple(missing)
