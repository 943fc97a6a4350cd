"""Hand-built facts and test data paths for the easyconfig linter tests."""

import dataclasses
import os
from pathlib import Path

from eb_torchperf.lint.facts import Dependency, EasyconfigFacts, FlexiBLASFacts, ToolchainFacts

DATA = Path(__file__).resolve().parents[1] / "data" / "easyconfigs"
ROBOT = DATA / "robot"
BAD = DATA / "bad"
#: The easybuild-easyconfigs release the pinned collection findings were taken from.
PINNED_COLLECTION_VERSION = "5.4.1"


def foss_2025a() -> ToolchainFacts:
    """foss/2025a as resolved from its easyconfig in easybuild-easyconfigs 5.4.1."""
    return ToolchainFacts(
        name="foss", version="2025a",
        components=("GCC", "OpenMPI", "FlexiBLAS", "FFTW", "FFTW.MPI", "ScaLAPACK"),
        components_source="foss-2025a.eb",
        component_versions={"GCC": "14.2.0", "FlexiBLAS": "3.4.5"},
        native_flag="-march=native", imkl_hint="2025.1.0")


def make_facts(**overrides) -> EasyconfigFacts:
    """Facts of a PyTorch 2.9.1 foss/2025a CPU source build; `overrides` replace fields."""
    base = EasyconfigFacts(
        path="PyTorch-2.9.1-foss-2025a.eb", name="PyTorch", version="2.9.1", versionsuffix="",
        easyblock="EB_PyTorch", install_kind="source", arch="x86_64", toolchain=foss_2025a(),
        dependencies=(Dependency("Python", "3.13.1", toolchain="GCCcore/14.2.0", line=20),),
        flexiblas=FlexiBLASFacts("3.4.5", "OpenBLAS", "FlexiBLAS-3.4.5-GCC-14.2.0.eb"),
        runtest="%(python)s test/run_test.py", max_failed_tests=10,
        lines={"toolchain": 8, "dependencies": 19, "runtest": 40, "max_failed_tests": 41,
               "skipsteps": 42, "toolchainopts": 9, "cuda_compute_capabilities": 43})
    return dataclasses.replace(base, **overrides)


def deps(*specs) -> tuple:
    """Dependencies from (name, version[, line]) tuples."""
    return tuple(Dependency(spec[0], spec[1], line=spec[2] if len(spec) > 2 else None)
                 for spec in specs)


def sandbox_unreadable_reason():
    """Why the sandboxed lint tests cannot read this checkout, or None: as root the
    sandbox parses as `nobody`, who cannot enter a private folder above the test data
    (a checkout under `mktemp -d` is 0700)."""
    from eb_torchperf.lint.confine import mechanism
    from eb_torchperf.lint.sandbox import SANDBOX_USER, private_folder
    if os.geteuid() != 0 or mechanism() == "bwrap":  # bubblewrap binds the folders in
        return None
    private = private_folder(str(ROBOT / "x"))
    if private is None:
        return None
    return ("the checkout is under %s, which the lint sandbox's user %r cannot enter "
            "(chmod o+x, or check out elsewhere)" % (private, SANDBOX_USER))
