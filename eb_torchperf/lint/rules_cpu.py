"""Rules about CPU performance of source builds: BLAS, Arm Compute Library, optarch.

Each rule is `(facts, options) -> list[Finding]` and is listed in `rules.RULES`.
"""

from typing import Dict, List, Optional, Tuple

from eb_torchperf.records.findings import Finding
from eb_torchperf.lint.common import finding, version_tuple
from eb_torchperf.lint.facts import EasyconfigFacts
from eb_torchperf.lint.options import LintOptions

#: BLAS libraries in the order the PyTorch easyblock tries them, with the PyTorch
#: setting it then passes and the lowest PyTorch version it does so for
#: (easybuild-easyblocks easybuild/easyblocks/p/pytorch.py, configure_step: imkl ->
#: BLAS=MKL; FlexiBLAS -> BLAS=FlexiBLAS from 1.11.0, the first PyTorch whose setup.py
#: accepts it; BLIS -> BLAS=BLIS from 1.9.0; OpenBLAS -> BLAS=Eigen, WITH_BLAS=open).
EASYBLOCK_BLAS_ORDER = (
    ("imkl", "MKL", ()),
    ("FlexiBLAS", "FlexiBLAS", (1, 11)),
    ("BLIS", "BLIS", (1, 9)),
    ("OpenBLAS", "Eigen+OpenBLAS", ()),
)
#: The EasyBuild thread where source builds were measured against the upstream wheels.
BLAS_SOURCE = "https://github.com/easybuilders/easybuild/issues/931"
#: What was measured there for non-MKL builds: TorchBench CPU relative OPS of the
#: EasyBuild foss source build vs the upstream wheel (PyTorch 2.6.0 and 2.9.1; the
#: published tables give totals of 31.9 % training and 35.5 % inference for 2.6.0).
#: Switching FlexiBLAS to its imkl backend at run time stayed at about a third, so the
#: build-time BLAS=MKL setting matters, not only the library loaded.
MEASURED_CPU_THROUGHPUT = "28-46 % of the upstream wheel's CPU throughput (TorchBench)"
#: Fix direction: imkl as a direct dependency (e.g. this easyconfigs PR series).
BLAS_FIX_PR = "https://github.com/easybuilders/easybuild-easyconfigs/pull/25736"

#: The PyTorch easyblock enables oneDNN's ACL backend (USE_MKLDNN_ACL) when
#: ArmComputeLibrary is a dependency, from PyTorch 1.10 (easyblocks p/pytorch.py).
ACL_MIN_VERSION = (1, 10)
#: Upstream aarch64 wheels are built with ACL (pytorch .ci/docker/common/install_acl.sh).
ACL_SOURCE = "https://github.com/pytorch/pytorch/blob/main/.ci/docker/common/install_acl.sh"

#: EasyBuild adds the compiler's "native" flag unless optarch says otherwise.
OPTARCH_SOURCE = "https://docs.easybuild.io/controlling-compiler-optimization-flags/"
#: `eb --optarch=GENERIC` asks for the compiler's generic flags (tools/toolchain/compiler.py).
OPTARCH_GENERIC = "GENERIC"


def _available_blas(facts: EasyconfigFacts) -> Dict[str, str]:
    """BLAS library name -> where it comes from, as the build environment will have it."""
    available = {}
    for name in facts.toolchain.components:
        available.setdefault(name, "toolchain %s" % facts.toolchain.label())
    for dep in facts.dependencies:
        available[dep.name] = "dependency %s" % dep.spec()
    backend = facts.flexiblas.default_backend if facts.flexiblas else None
    if backend:
        # FlexiBLAS's module loads its default backend (a runtime dependency) too.
        available.setdefault(backend, "FlexiBLAS default backend")
    return available


def pytorch_blas(facts: EasyconfigFacts) -> Tuple[Optional[str], str, str]:
    """The BLAS the PyTorch easyblock will configure, following EASYBLOCK_BLAS_ORDER.

    Returns:
        (PyTorch BLAS setting or None when no supported BLAS is available, library name,
        where the library comes from).
    """
    available = _available_blas(facts)
    version = version_tuple(facts.version)
    for library, setting, min_version in EASYBLOCK_BLAS_ORDER:
        if library in available and version >= min_version:
            return setting, library, available[library]
    return None, "", ""


def _blas_line(facts: EasyconfigFacts, library: str) -> Optional[int]:
    """Line of the dependency providing `library`, else of `toolchain`."""
    dep = facts.dependency(library)
    return dep.line if dep and dep.line else facts.line("toolchain")


def rule_blas_not_mkl(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """x86-64 source build whose PyTorch BLAS is not MKL (FlexiBLAS, OpenBLAS, BLIS).

    Source: easybuilders/easybuild#931 (BLAS_SOURCE); fix: imkl as a direct dependency.
    """
    if facts.install_kind != "source" or options.arch != "x86_64":
        return []
    setting, library, origin = pytorch_blas(facts)
    if setting in (None, "MKL"):
        return []
    evidence = {"target_arch": options.arch, "pytorch_blas": setting, "blas_library": library,
                "blas_from": origin, "imkl_dependency": False,
                "measured": MEASURED_CPU_THROUGHPUT}
    backend = ""
    if library == "FlexiBLAS" and facts.flexiblas:
        backend = facts.flexiblas.default_backend or "unknown"
        evidence.update({"flexiblas_version": facts.flexiblas.version or "unknown",
                         "flexiblas_default_backend": backend,
                         "flexiblas_easyconfig": facts.flexiblas.easyconfig or "not found"})
    imkl = facts.toolchain.imkl_hint or "VERSION"
    title = "CPU BLAS will be %s%s, not MKL: expect %s" % (
        library, " (default backend %s)" % backend if backend else "", MEASURED_CPU_THROUGHPUT)
    advice = ("Add imkl as a direct dependency for x86_64, e.g. `if ARCH == 'x86_64': "
              "dependencies.append(('imkl', '%s', '', SYSTEM))`%s, so the PyTorch easyblock "
              "configures BLAS=MKL (see %s). Switching FlexiBLAS to imkl at run time is not "
              "enough: the same thread measured it at about a third of the wheel."
              % (imkl, " (imkl of intel/%s)" % facts.toolchain.version
                 if facts.toolchain.imkl_hint else "", BLAS_FIX_PR))
    return [finding(facts, "blas-not-mkl", "warning", title, evidence, advice, BLAS_SOURCE,
                    _blas_line(facts, library))]


def rule_blas_missing(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """Source build with no BLAS the PyTorch easyblock supports: the build stops.

    Source: easyblocks p/pytorch.py configure_step ("Did not find a supported BLAS").
    """
    if facts.install_kind != "source" or facts.easyblock != "EB_PyTorch":
        return []
    if pytorch_blas(facts)[0] is not None:
        return []
    evidence = {"toolchain": facts.toolchain.label(),
                "toolchain_components": list(facts.toolchain.components),
                "dependencies": list(facts.dependency_names())}
    return [finding(facts, "blas-missing", "error",
                    "No BLAS the PyTorch easyblock supports (imkl, FlexiBLAS, BLIS, OpenBLAS): "
                    "EasyBuild will stop at the configure step", evidence,
                    "Use a toolchain with BLAS (e.g. foss) or add imkl (x86_64) or OpenBLAS "
                    "as a dependency.",
                    "https://github.com/easybuilders/easybuild-easyblocks/blob/main/"
                    "easybuild/easyblocks/p/pytorch.py", facts.line("toolchain"))]


def rule_aarch64_no_acl(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """aarch64 source build without ArmComputeLibrary: oneDNN lacks its ACL backend.

    Source: ACL_SOURCE (upstream aarch64 builds use ACL); the PyTorch easyblock sets
    USE_MKLDNN_ACL only when ArmComputeLibrary is a dependency.
    """
    if facts.install_kind != "source" or options.arch != "aarch64":
        return []
    if version_tuple(facts.version) < ACL_MIN_VERSION or facts.dependency("ArmComputeLibrary"):
        return []
    evidence = {"target_arch": options.arch, "ArmComputeLibrary": "not a dependency",
                "pytorch_blas": pytorch_blas(facts)[0] or "none"}
    return [finding(facts, "aarch64-no-acl", "warning",
                    "aarch64 build without ArmComputeLibrary: oneDNN runs without its Arm "
                    "Compute Library backend, unlike the upstream aarch64 wheels", evidence,
                    "Add ArmComputeLibrary for aarch64, e.g. `if ARCH == 'aarch64': "
                    "dependencies.append(('ArmComputeLibrary', 'VERSION'))` (versions in "
                    "a/ArmComputeLibrary of the easyconfigs repository); the PyTorch easyblock "
                    "then sets USE_MKLDNN_ACL=ON.", ACL_SOURCE, facts.line("dependencies"))]


def effective_optarch(facts: EasyconfigFacts) -> Tuple[Optional[str], str]:
    """Architecture flags EasyBuild will compile with, and which setting decides them.

    Order as in Compiler._set_optimal_architecture: --optarch=GENERIC wins; then
    toolchainopts['optarch'] (False: no flags, a string: those flags); then the
    --optarch configuration; then the compiler's native flag for the target.

    Returns:
        (flags or None when none are added, the deciding setting).
    """
    if facts.eb_optarch == OPTARCH_GENERIC:
        return "generic", "EasyBuild configuration --optarch=GENERIC"
    if facts.optarch is False:
        return None, "toolchainopts optarch=False"
    if isinstance(facts.optarch, str):
        return facts.optarch, "toolchainopts optarch"
    if facts.eb_optarch:
        return facts.eb_optarch, "EasyBuild configuration --optarch"
    return facts.toolchain.native_flag, "EasyBuild default for toolchain %s" % facts.toolchain.label()


def rule_optarch_native(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """Source build compiled for the build host's CPU (`-march=native` default).

    Warning when the site builds once for several CPU types (options.heterogeneous),
    info otherwise.  Source: OPTARCH_SOURCE.
    """
    if facts.install_kind != "source":
        return []
    flags, decided_by = effective_optarch(facts)
    if not flags or "native" not in flags:
        return []
    severity = "warning" if options.heterogeneous else "info"
    evidence = {"flags": flags, "decided_by": decided_by, "target_arch": options.arch,
                "heterogeneous_site": options.heterogeneous}
    line = facts.line("toolchainopts") if decided_by.startswith("toolchainopts") else None
    return [finding(facts, "optarch-native", severity,
                    "Binaries will be tied to the build host's CPU (%s)" % flags, evidence,
                    "Build on the oldest CPU type the module must run on, build per CPU type, "
                    "or set a portable baseline in the EasyBuild configuration (e.g. "
                    "--optarch='-march=x86-64-v3' or --optarch=GENERIC); ATen still picks "
                    "AVX2/AVX-512 kernels at run time.", OPTARCH_SOURCE,
                    line or facts.line("toolchain"))]
