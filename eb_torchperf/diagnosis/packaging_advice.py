"""Remedies phrased for the packaging system that installed the target's torch.

The rules write their advice for EasyBuild (easyconfig, module, `eb` options), which
stays the default.  When the probe found another packaging system (facts "install",
see probe/install_kind.py: Spack, conda, Debian/Ubuntu, a pip venv), a finding whose
rule has an entry here gets that advice first, then the EasyBuild one after
"EasyBuild: " for sites that rebuild there.  One table, (rule_id, kind) -> text, so the
rules stay as they are.

Sources: Debian's BLAS/LAPACK alternatives (https://wiki.debian.org/DebianScience/
LinearAlgebraLibraries); Spack's py-torch package variants (`+mkldnn`, `+openmp`, the
`blas`/`lapack` virtuals: https://packages.spack.io/package.html?name=py-torch);
conda-forge's pytorch builds and BLAS selection (https://conda-forge.org/docs/
maintainer/knowledge_base/#switching-blas-implementation).
"""

import dataclasses
from typing import Iterable, Optional, Tuple

from eb_torchperf.records.findings import Finding

#: kind -> how the report names the packaging system.
KIND_NAMES = {"easybuild": "EasyBuild", "spack": "Spack", "conda": "conda",
              "debian": "Debian/Ubuntu package", "venv": "pip (venv)", "pip": "pip"}

_PIP = ("Install the upstream wheel (pip install torch==<version> from "
        "https://download.pytorch.org/whl/cpu, or the CUDA index): it is built with MKL, "
        "oneDNN and OpenMP; a wheel built locally from source needs those at build time.")
_WHEEL = ("Use the upstream wheel: `pip install torch` in a venv.", _PIP)
_EB_IMKL = "Rebuild the module with imkl in the easyconfig's dependencies"
_SPACK_MKL = "`spack install py-torch ^intel-oneapi-mkl`."
_CONDA_MKL = "`conda install -c conda-forge pytorch \"libblas=*=*mkl\"`."

#: rule_id -> {kinds (space-separated) -> (the remedy's first line: what to do, in one
#: line, for that kind of installation; the details for it)}.  "easybuild" also stands
#: for results that do not say how torch was installed; its details are the rule's own
#: advice.  The first line is shown first by every output (present.findings_view).
REMEDIES = {
    "blas-not-mkl": {
        "easybuild": (_EB_IMKL + " (BLAS=MKL).", ""),
        "debian": (
            "`apt-get install libopenblas0-openmp`, then select it with `update-alternatives "
            "--config libblas.so.3-x86_64-linux-gnu`.",
            "Debian/Ubuntu's python3-torch calls the system libblas.so.3: select liblapack.so."
            "3-x86_64-linux-gnu the same way; libblis4-openmp is another optimised BLAS; for "
            "MKL speed use the upstream wheel in a venv (pip install torch)."),
        "spack": (_SPACK_MKL,
                  "Rebuild py-torch against MKL: `spack install py-torch ^intel-oneapi-mkl` "
                  "(the blas and lapack virtuals), or set `packages: all: providers: blas: "
                  "[intel-oneapi-mkl]` in packages.yaml."),
        "conda": (_CONDA_MKL,
                  "Install the MKL build: `conda install -c conda-forge pytorch "
                  "\"libblas=*=*mkl\"` (conda-forge's BLAS switch), or the pytorch channel's "
                  "build, which uses MKL."),
        "venv pip": _WHEEL},
    "mkl-missing": {
        "easybuild": (_EB_IMKL + ".", ""),
        "spack": (_SPACK_MKL,
                  "Build py-torch with MKL: `spack install py-torch ^intel-oneapi-mkl`; with GCC "
                  "set MKL_THREADING_LAYER=GNU in the environment (spack env / modules.yaml)."),
        "conda": (_CONDA_MKL,
                  "`conda install -c conda-forge pytorch \"libblas=*=*mkl\"` (or mkl from "
                  "defaults); with GNU OpenMP set MKL_THREADING_LAYER=GNU."),
        "debian": (_WHEEL[0], "Debian's python3-torch is not built with MKL; use the upstream "
                              "wheel in a venv (pip install torch), which is."),
        "venv pip": _WHEEL},
    "blas-pthreads-with-openmp": {
        "debian": ("", "Select the OpenMP flavour of OpenBLAS: `apt-get install "
                       "libopenblas0-openmp` and `update-alternatives --config libblas.so.3-"
                       "x86_64-linux-gnu` to its libblas.so.3; OMP_WAIT_POLICY=PASSIVE stops "
                       "idle OpenMP threads spinning meanwhile."),
        "spack": ("", "Build OpenBLAS with OpenMP threading: `spack install py-torch ^openblas "
                      "threads=openmp`."),
        "conda": ("", "Install the OpenMP build of OpenBLAS: `conda install -c conda-forge "
                      "\"libopenblas=*=*openmp*\"`, or switch to MKL (\"libblas=*=*mkl\")."),
    },
    "onednn-off": {
        "spack": ("", "Rebuild with `spack install py-torch +mkldnn`."),
        "conda": ("", "Install a pytorch build with oneDNN (conda-forge's and the pytorch "
                      "channel's CPU builds have it), and do not set "
                      "torch.backends.mkldnn.enabled = False."),
        "debian": (_WHEEL[0], "Debian's python3-torch is built without oneDNN on some "
                              "releases; use the upstream wheel in a venv (pip install torch)."),
        "venv pip": _WHEEL},
    "march-native": {
        "spack": ("", "Build for the oldest CPU you serve: `spack install py-torch "
                      "target=x86_64_v3` (Spack's archspec targets), one build per node type "
                      "where they differ.")},
    "multiple-openmp": {
        "spack": ("", "Keep one OpenMP runtime: build py-torch and its BLAS with one compiler "
                      "(`%gcc` throughout: libgomp), e.g. `^openblas threads=openmp`."),
        "conda": ("", "Keep one OpenMP runtime: install `_openmp_mutex=*=*_gnu` (or *_llvm) so "
                      "every package uses the same libgomp/libomp, and do not mix pip and conda "
                      "builds of torch/numpy in one environment."),
        "debian": ("", "Keep one OpenMP runtime: select BLAS alternatives built with libgomp "
                       "(libopenblas0-openmp, libblis4-openmp) rather than the pthreads or LLVM "
                       "ones.")},
    "debug-build": {
        "spack": ("", "Rebuild with `spack install py-torch build_type=Release`.")},
}

#: (rule_id, kind) -> (first line, details): REMEDIES by single kind.
BY_KIND = {(rule, kind): entry for rule, kinds in REMEDIES.items()
           for names, entry in kinds.items() for kind in names.split()}
#: (rule_id, kind) -> the remedy's first line, where REMEDIES has one.
FIRST_LINE = {key: first for key, (first, _) in BY_KIND.items() if first}
#: (rule_id, kind) -> the details for that packaging system.
ADVICE = {key: details for key, (_, details) in BY_KIND.items() if details}


def install_kind(probe) -> Optional[str]:
    """The target's packaging system from its facts ("install" section), or None."""
    if probe is None:
        return None
    return probe.fact("install", "kind")


def advise(finding: Finding, kind: Optional[str]) -> Finding:
    """`finding` with its advice for `kind` first (EasyBuild's after "EasyBuild: "), opened
    by FIRST_LINE's line for (rule, kind) and a newline where the table has one; EasyBuild
    stands for results that do not say how torch was installed (kind None)."""
    text = ADVICE.get((finding.rule_id, kind))
    advice = "%s EasyBuild: %s" % (text, finding.advice) if text and finding.advice \
        else text or finding.advice
    first = FIRST_LINE.get((finding.rule_id, kind or "easybuild"))
    if first:
        advice = "%s\n%s" % (first, advice)
    return finding if advice == finding.advice else dataclasses.replace(finding, advice=advice)


def advise_all(findings: Iterable[Finding], kind: Optional[str]) -> Tuple[Finding, ...]:
    """advise() over `findings`."""
    return tuple(advise(f, kind) for f in findings)
