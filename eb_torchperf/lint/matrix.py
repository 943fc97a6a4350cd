"""Versions that belong together, from PyTorch's published release compatibility matrix.

Only pairs with a public matrix are checked: PyTorch vs Python, and PyTorch vs the CUDA
versions its release binaries are built and tested with.

Source: https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix
(columns "Python", "Stable CUDA", "Experimental CUDA"; rows 1.12 to 2.14).  Reading of
the Python column: "<=3.13, (3.13t experimental)" is stable up to 3.13 (free-threaded
builds are not modelled: EasyBuild's Python is not free-threaded);
"<=(3.14, 3.14t experimental)" and "(3.12 experimental)" mark that minor as experimental,
so the stable maximum is the one before it.
"""

from typing import Dict, List, NamedTuple, Optional, Tuple

from eb_torchperf.records.findings import Finding
from eb_torchperf.lint.common import finding, major_minor, version_tuple
from eb_torchperf.lint.facts import EasyconfigFacts
from eb_torchperf.lint.options import LintOptions

MATRIX_SOURCE = "https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix"
#: PyTorch's setup.py exits when Python is older than python_min_version.
SETUP_PY_SOURCE = "https://github.com/pytorch/pytorch/blob/main/setup.py"


class Release(NamedTuple):
    """One row of the matrix (versions as "major.minor")."""

    python_min: str
    python_max: str
    python_experimental: Optional[str]
    cuda: Tuple[str, ...]


#: PyTorch minor -> Release (MATRIX_SOURCE; stable and experimental CUDA together).
RELEASES: Dict[str, Release] = {
    "2.14": Release("3.10", "3.14", "3.15", ("12.6", "13.0", "13.2")),
    "2.13": Release("3.10", "3.14", "3.15", ("12.6", "13.0", "13.2")),
    "2.12": Release("3.10", "3.13", "3.14", ("12.6", "13.0", "13.2")),
    "2.11": Release("3.10", "3.13", "3.14", ("12.6", "12.8", "13.0")),
    "2.10": Release("3.10", "3.13", "3.14", ("12.6", "12.8", "13.0")),
    "2.9": Release("3.10", "3.13", "3.14", ("12.6", "12.8", "13.0")),
    "2.8": Release("3.9", "3.13", None, ("12.6", "12.8", "12.9")),
    "2.7": Release("3.9", "3.13", None, ("11.8", "12.6", "12.8")),
    "2.6": Release("3.9", "3.13", None, ("11.8", "12.4", "12.6")),
    "2.5": Release("3.9", "3.12", "3.13", ("11.8", "12.1", "12.4")),
    "2.4": Release("3.8", "3.12", None, ("11.8", "12.1", "12.4")),
    "2.3": Release("3.8", "3.11", "3.12", ("11.8", "12.1")),
    "2.2": Release("3.8", "3.11", "3.12", ("11.8", "12.1")),
    "2.1": Release("3.8", "3.11", None, ("11.8", "12.1")),
    "2.0": Release("3.8", "3.11", None, ("11.7", "11.8")),
    "1.13": Release("3.7", "3.10", None, ("11.6", "11.7")),
    "1.12": Release("3.7", "3.10", None, ("11.3", "11.6")),
}


def _release(facts: EasyconfigFacts) -> Optional[Release]:
    """The matrix row for a PyTorch build/install, None for others or unlisted versions."""
    if facts.install_kind not in ("source", "wheel"):
        return None
    return RELEASES.get(major_minor(facts.version))


def python_verdict(python: str, release: Release) -> Optional[Tuple[str, str]]:
    """(severity, what) for `python` ("3.13.1") against a matrix row, None when supported."""
    version = version_tuple(python)[:2]
    if version < version_tuple(release.python_min):
        return "error", "below the minimum %s" % release.python_min
    if version <= version_tuple(release.python_max):
        return None
    if release.python_experimental and version == version_tuple(release.python_experimental):
        return "info", "experimental upstream (stable up to %s)" % release.python_max
    return "warning", "above the tested maximum %s" % release.python_max


def rule_python_version(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """Python dependency outside the PyTorch release's Python range.

    Sources: MATRIX_SOURCE; below the minimum, SETUP_PY_SOURCE refuses to build and no
    wheel exists for that Python.
    """
    release, python = _release(facts), facts.dependency("Python")
    if release is None or python is None:
        return []
    verdict = python_verdict(python.version, release)
    if verdict is None:
        return []
    severity, what = verdict
    evidence = {"pytorch": facts.version, "python": python.version,
                "python_min": release.python_min, "python_max": release.python_max,
                "python_experimental": release.python_experimental}
    return [finding(facts, "python-version", severity,
                    "Python %s is %s for PyTorch %s" % (python.version, what,
                                                        major_minor(facts.version)),
                    evidence,
                    "Use a toolchain generation whose Python is within %s-%s for PyTorch %s, "
                    "or a PyTorch release that supports Python %s."
                    % (release.python_min, release.python_max, major_minor(facts.version),
                       major_minor(python.version)),
                    SETUP_PY_SOURCE if severity == "error" else MATRIX_SOURCE, python.line)]


def rule_cuda_version(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """CUDA version the PyTorch release is not built and tested with upstream (info).

    Source: MATRIX_SOURCE (Stable and Experimental CUDA columns).  EasyBuild often builds
    with other CUDA versions successfully; this says the combination is untested upstream.
    """
    release, cuda = _release(facts), facts.dependency("CUDA")
    if release is None or cuda is None or major_minor(cuda.version) in release.cuda:
        return []
    evidence = {"pytorch": facts.version, "cuda": cuda.version,
                "upstream_cuda": list(release.cuda)}
    return [finding(facts, "cuda-version-untested", "info",
                    "CUDA %s is not among the CUDA versions PyTorch %s is released with (%s)"
                    % (major_minor(cuda.version), major_minor(facts.version),
                       ", ".join(release.cuda)), evidence,
                    "Expect test failures the upstream CI has not seen; prefer a CUDA %s "
                    "toolchain generation when there is a choice." % " or ".join(release.cuda),
                    MATRIX_SOURCE, cuda.line)]
