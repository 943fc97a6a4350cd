"""BLAS, Arm Compute Library and optarch rules at their boundaries (pure)."""

import dataclasses

import pytest

from eb_torchperf.lint.facts import Dependency, FlexiBLASFacts
from eb_torchperf.lint.options import LintOptions
from eb_torchperf.lint.rules_cpu import (effective_optarch, pytorch_blas, rule_aarch64_no_acl,
                                         rule_blas_missing, rule_blas_not_mkl,
                                         rule_optarch_native)
from lint_factories import deps, foss_2025a, make_facts

ARM = LintOptions(arch="aarch64")


def intel_2025a():
    return dataclasses.replace(foss_2025a(), name="intel",
                               components=("intel-compilers", "impi", "imkl", "imkl-FFTW"),
                               native_flag="-xHost")


def test_blas_follows_easyblock_order_imkl_first():
    facts = make_facts(dependencies=deps(("Python", "3.13.1"), ("imkl", "2025.1.0", 21)))
    assert pytorch_blas(facts) == ("MKL", "imkl", "dependency imkl-2025.1.0")


def test_blas_from_intel_toolchain_is_mkl():
    facts = make_facts(toolchain=intel_2025a(), flexiblas=None)
    assert pytorch_blas(facts) == ("MKL", "imkl", "toolchain intel/2025a")


def test_flexiblas_from_1_11_0():
    facts = make_facts(version="1.11.0")
    assert pytorch_blas(facts) == ("FlexiBLAS", "FlexiBLAS", "toolchain foss/2025a")


def test_below_1_11_flexiblas_is_skipped_for_its_backend():
    facts = make_facts(version="1.10.2")
    assert pytorch_blas(facts) == ("Eigen+OpenBLAS", "OpenBLAS", "FlexiBLAS default backend")


@pytest.mark.parametrize("version, expected", [("1.9.0", "BLIS"), ("1.8.1", None)])
def test_blis_from_1_9_0(version, expected):
    facts = make_facts(version=version, toolchain=dataclasses.replace(foss_2025a(), components=()),
                       flexiblas=None, dependencies=deps(("BLIS", "1.1")))
    assert pytorch_blas(facts)[0] == expected


def test_blas_not_mkl_on_foss_x86(x86):
    (found,) = rule_blas_not_mkl(make_facts(), x86)
    assert (found.rule_id, found.severity, found.line) == ("blas-not-mkl", "warning", 8)
    assert found.title == ("CPU BLAS will be FlexiBLAS (default backend OpenBLAS), not MKL: "
                           "expect 28-46 % of the upstream wheel's CPU throughput (TorchBench)")
    assert found.evidence["blas_from"] == "toolchain foss/2025a"
    assert found.evidence["flexiblas_default_backend"] == "OpenBLAS"
    assert found.evidence["imkl_dependency"] is False
    assert "('imkl', '2025.1.0', '', SYSTEM)" in found.advice
    assert "(imkl of intel/2025a)" in found.advice
    assert found.source == "https://github.com/easybuilders/easybuild/issues/931"
    assert found.subject == "PyTorch-2.9.1-foss-2025a.eb"


def test_blas_not_mkl_line_is_the_dependency_when_direct(x86):
    facts = make_facts(toolchain=dataclasses.replace(foss_2025a(), components=("GCC",)),
                       flexiblas=None, dependencies=deps(("OpenBLAS", "0.3.29", 23)))
    (found,) = rule_blas_not_mkl(facts, x86)
    assert found.line == 23
    assert found.evidence["pytorch_blas"] == "Eigen+OpenBLAS"
    assert "flexiblas_default_backend" not in found.evidence


def test_blas_not_mkl_unknown_backend_says_so(x86):
    facts = make_facts(flexiblas=FlexiBLASFacts(version=""))
    (found,) = rule_blas_not_mkl(facts, x86)
    assert found.evidence["flexiblas_default_backend"] == "unknown"
    assert found.evidence["flexiblas_version"] == "unknown"


@pytest.mark.parametrize("facts, options", [
    (make_facts(dependencies=deps(("imkl", "2025.1.0"))), LintOptions(arch="x86_64")),
    (make_facts(), ARM),
    (make_facts(install_kind="wheel"), LintOptions(arch="x86_64")),
])
def test_blas_not_mkl_silent(facts, options):
    assert rule_blas_not_mkl(facts, options) == []


def test_blas_missing_is_an_error(x86):
    facts = make_facts(toolchain=dataclasses.replace(foss_2025a(), components=("GCCcore",)),
                       flexiblas=None)
    (found,) = rule_blas_missing(facts, x86)
    assert (found.rule_id, found.severity, found.line) == ("blas-missing", "error", 8)
    assert rule_blas_missing(make_facts(), x86) == []


@pytest.mark.parametrize("version, acl, expected", [
    ("1.10.0", False, ["aarch64-no-acl"]),
    ("1.9.1", False, []),
    ("2.9.1", True, []),
])
def test_aarch64_no_acl_boundaries(version, acl, expected):
    extra = (Dependency("ArmComputeLibrary", "25.02"),) if acl else ()
    facts = make_facts(version=version, dependencies=make_facts().dependencies + extra)
    assert [f.rule_id for f in rule_aarch64_no_acl(facts, ARM)] == expected


def test_aarch64_rule_only_for_aarch64_target(x86):
    assert rule_aarch64_no_acl(make_facts(), x86) == []


@pytest.mark.parametrize("optarch, eb_optarch, expected", [
    (None, None, ("-march=native", "EasyBuild default for toolchain foss/2025a")),
    ("-march=x86-64-v3", "GENERIC", ("generic", "EasyBuild configuration --optarch=GENERIC")),
    (False, "-march=native", (None, "toolchainopts optarch=False")),
    ("-march=znver3", "-march=native", ("-march=znver3", "toolchainopts optarch")),
    (True, "-march=x86-64-v3", ("-march=x86-64-v3", "EasyBuild configuration --optarch")),
])
def test_effective_optarch_order(optarch, eb_optarch, expected):
    assert effective_optarch(make_facts(optarch=optarch, eb_optarch=eb_optarch)) == expected


def test_optarch_native_is_info_on_homogeneous_site(x86):
    (found,) = rule_optarch_native(make_facts(), x86)
    assert (found.rule_id, found.severity, found.line) == ("optarch-native", "info", 8)
    assert found.evidence["flags"] == "-march=native"


def test_optarch_native_is_warning_on_heterogeneous_site():
    (found,) = rule_optarch_native(make_facts(optarch="-march=native"),
                                   LintOptions(arch="x86_64", heterogeneous=True))
    assert (found.severity, found.line) == ("warning", 9)


@pytest.mark.parametrize("overrides", [
    {"optarch": "-march=x86-64-v3"}, {"eb_optarch": "GENERIC"}, {"optarch": False},
    {"install_kind": "wheel"},
])
def test_optarch_native_silent(overrides, x86):
    assert rule_optarch_native(make_facts(**overrides), x86) == []
