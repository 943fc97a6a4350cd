"""Plain facts about one easyconfig, as the lint rules need them.

`parse.py` fills these from easybuild-framework's own parser (templates resolved,
dependencies finalised, toolchain resolved); the rules read only these dataclasses, so
they are pure and can be tested with hand-built facts and without EasyBuild.
"""

import dataclasses
from typing import Dict, Optional, Tuple

#: How the easyconfig provides torch.
#: "source": EB_PyTorch easyblock compiles PyTorch; "wheel": an upstream torch wheel is
#: installed (e.g. PythonBundle with a `.whl` source); "dependent": another package that
#: uses PyTorch; "other": no PyTorch involved.
INSTALL_KINDS = ("source", "wheel", "dependent", "other")


@dataclasses.dataclass(frozen=True)
class Dependency:
    """One (build)dependency after EasyBuild finalised it.

    Attributes:
        name: software name, e.g. "FlexiBLAS".
        version: version string, e.g. "3.4.5".
        versionsuffix: e.g. "-CUDA-12.8.0" ("" when none).
        toolchain: "name/version" of the (sub)toolchain EasyBuild picked, "system/system"
            for SYSTEM.
        build_only: True for `builddependencies`.
        line: line in the easyconfig file where the dependency is written, else None.
    """

    name: str
    version: str
    versionsuffix: str = ""
    toolchain: str = ""
    build_only: bool = False
    line: Optional[int] = None

    def spec(self) -> str:
        """EasyBuild-style label, e.g. "FlexiBLAS-3.4.5 (GCC/14.2.0)"."""
        label = "%s-%s%s" % (self.name, self.version, self.versionsuffix)
        return "%s (%s)" % (label, self.toolchain) if self.toolchain else label


@dataclasses.dataclass(frozen=True)
class ToolchainFacts:
    """The easyconfig's toolchain, resolved with EasyBuild's toolchain machinery.

    Attributes:
        name: toolchain name, e.g. "foss".
        version: toolchain version, e.g. "2025a".
        components: names of the software the toolchain loads (e.g. GCC, OpenMPI,
            FlexiBLAS, FFTW, ScaLAPACK), from the toolchain easyconfig when found, else
            from the toolchain class's *_MODULE_NAME constants.
        components_source: where `components` came from (easyconfig path or class name).
        component_versions: name -> version, only when read from the toolchain easyconfig.
        native_flag: compiler flag EasyBuild adds by default for the target architecture
            (`COMPILER_OPTIMAL_ARCHITECTURE_OPTION`, e.g. "-march=native"), None if none.
        imkl_hint: imkl version of the Intel toolchain of the same generation (e.g.
            intel/2025a), a starting point for adding imkl; None when not found.
    """

    name: str
    version: str
    components: Tuple[str, ...] = ()
    components_source: str = ""
    component_versions: Dict[str, str] = dataclasses.field(default_factory=dict)
    native_flag: Optional[str] = None
    imkl_hint: Optional[str] = None

    def label(self) -> str:
        """"name/version", e.g. "foss/2025a"."""
        return "%s/%s" % (self.name, self.version)


@dataclasses.dataclass(frozen=True)
class FlexiBLASFacts:
    """The FlexiBLAS a build would load (direct dependency or toolchain component).

    Attributes:
        version: FlexiBLAS version.
        default_backend: backend FlexiBLAS uses unless $FLEXIBLAS says otherwise
            (`flexiblas_default`, else the first of `backends`, else the first runtime
            dependency; FlexiBLAS easyblock), None when its easyconfig was not found.
        easyconfig: path of the FlexiBLAS easyconfig read, "" when not found.
    """

    version: str
    default_backend: Optional[str] = None
    easyconfig: str = ""


@dataclasses.dataclass(frozen=True)
class EasyconfigFacts:
    """What the lint rules know about one easyconfig.

    Attributes:
        path: easyconfig file path (the Finding subject).
        name, version, versionsuffix: as resolved by EasyBuild (templates applied).
        easyblock: easyblock class name, e.g. "EB_PyTorch" or "PythonBundle".
        install_kind: one of INSTALL_KINDS.
        arch: target CPU architecture the lint is for ("x86_64", "aarch64", ...).
        toolchain: resolved toolchain.
        dependencies: runtime and build dependencies, in file order.
        flexiblas: the FlexiBLAS in play, None when none.
        cuda_compute_capabilities: `cuda_compute_capabilities` easyconfig parameter.
        eb_cuda_compute_capabilities: EasyBuild configuration's
            `--cuda-compute-capabilities` (overrides the easyconfig), () when unset.
        runtest: `runtest` parameter (command string, bool or None).
        skipsteps: `skipsteps` parameter.
        max_failed_tests: `max_failed_tests` (easyblock default applied), None when the
            easyblock has no such parameter.
        optarch: `toolchainopts['optarch']` (None when not set).
        eb_optarch: EasyBuild configuration's `--optarch` as text, None when unset.
        torch_wheel: file name of the torch wheel for "wheel" installs, else "".
        lines: easyconfig parameter -> line where it is assigned.
        missing_dependencies: dependency specs with no easyconfig in the robot path.
        parse_warnings: warnings EasyBuild printed while parsing, one per entry.
        easyblocks_version: easybuild-easyblocks version whose defaults were used.
    """

    path: str
    name: str
    version: str
    versionsuffix: str
    easyblock: str
    install_kind: str
    arch: str
    toolchain: ToolchainFacts
    dependencies: Tuple[Dependency, ...] = ()
    flexiblas: Optional[FlexiBLASFacts] = None
    cuda_compute_capabilities: Tuple[str, ...] = ()
    eb_cuda_compute_capabilities: Tuple[str, ...] = ()
    runtest: object = None
    skipsteps: Tuple[str, ...] = ()
    max_failed_tests: Optional[int] = None
    optarch: object = None
    eb_optarch: Optional[str] = None
    torch_wheel: str = ""
    lines: Dict[str, int] = dataclasses.field(default_factory=dict)
    missing_dependencies: Tuple[Dependency, ...] = ()
    parse_warnings: Tuple[str, ...] = ()
    easyblocks_version: str = ""

    def __post_init__(self):
        if self.install_kind not in INSTALL_KINDS:
            raise ValueError("unknown install_kind %r (choose from %s)"
                             % (self.install_kind, ", ".join(INSTALL_KINDS)))

    def dependency(self, name: str) -> Optional[Dependency]:
        """The first (build)dependency called `name`, None when there is none."""
        return next((dep for dep in self.dependencies if dep.name == name), None)

    def dependency_names(self) -> Tuple[str, ...]:
        """Names of all (build)dependencies, in file order."""
        return tuple(dep.name for dep in self.dependencies)

    def line(self, param: str) -> Optional[int]:
        """Line where easyconfig parameter `param` is assigned, None if not in the file."""
        return self.lines.get(param)
