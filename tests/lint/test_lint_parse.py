"""Parsing hand-written easyconfigs with easybuild-framework (needs EasyBuild)."""

import pytest

from lint_factories import BAD, DATA, ROBOT

pytestmark = pytest.mark.usefixtures("easybuild_ready")


def parse(name, arch="x86_64", check_dependencies=True):
    from eb_torchperf.lint.parse import parse_path
    return parse_path(str(DATA / name), arch, check_dependencies)


def test_flexiblas_default_backend_comes_from_its_easyconfig():
    facts = parse("PyTorch-2.9.1-flexiblas-blis.eb")
    assert (facts.name, facts.version, facts.install_kind, facts.easyblock) == (
        "PyTorch", "2.9.1", "source", "EB_PyTorch")
    assert facts.flexiblas.version == "9.9.9"
    assert facts.flexiblas.default_backend == "BLIS"
    assert facts.flexiblas.easyconfig == str(ROBOT / "FlexiBLAS-9.9.9.eb")
    assert facts.max_failed_tests == 101
    assert facts.runtest == "%(python)s test/run_test.py --continue-through-error"
    assert [(d.name, d.version, d.toolchain, d.line) for d in facts.dependencies] == [
        ("Python", "3.12.0", "system/system", 10), ("FlexiBLAS", "9.9.9", "system/system", 11)]
    assert facts.missing_dependencies == ()
    assert facts.parse_warnings == ()


def test_templates_and_parameters_are_resolved():
    facts = parse("PyTorch-2.9.1-CUDA-12.8.0.eb")
    assert facts.versionsuffix == "-CUDA-12.8.0"
    assert facts.cuda_compute_capabilities == ("8.0", "9.0")
    assert facts.skipsteps == ("test",)
    assert facts.line("cuda_compute_capabilities") == 15
    assert facts.dependency("CUDA").line == 11


def test_easyblock_default_for_max_failed_tests():
    facts = parse("PyTorch-2.9.1-acl.eb")
    assert facts.max_failed_tests == 10  # EB_PyTorch extra_options default


def test_arch_decides_conditional_dependencies():
    from easybuild.framework.easyconfig.constants import EASYCONFIG_CONSTANTS
    host = EASYCONFIG_CONSTANTS["ARCH"][0]
    assert parse("PyTorch-2.9.1-acl.eb", "aarch64").dependency("ArmComputeLibrary").line == 13
    assert parse("PyTorch-2.9.1-acl.eb", "x86_64").dependency("ArmComputeLibrary") is None
    assert EASYCONFIG_CONSTANTS["ARCH"][0] == host


@pytest.mark.parametrize("arch", ["aarch64", "x86_64"])
def test_arch_decides_the_wheel(arch):
    facts = parse("PyTorch-2.9.1-whl.eb", arch)
    assert facts.install_kind == "wheel"
    assert facts.torch_wheel == "torch-2.9.1%%2Bcpu-cp312-cp312-manylinux_2_28_%s.whl" % arch


def test_missing_dependency_has_its_line():
    facts = parse("PyTorch-2.9.1-missing-dep.eb")
    assert [(d.name, d.version, d.line) for d in facts.missing_dependencies] == [
        ("NoSuchLib", "1.0", 11)]
    assert parse("PyTorch-2.9.1-missing-dep.eb", check_dependencies=False).missing_dependencies == ()


@pytest.mark.parametrize("path, message", [
    (BAD / "README-not-an-easyconfig.eb", r": cannot parse: invalid syntax \(<string>, line 1\)$"),
    (BAD / "syntax-error.eb", r": cannot parse: '\[' was never closed \(<string>, line 3\)$"),
    (BAD / "no-name.eb", r": not an easyconfig \(neither 'name' nor 'easyblock' is set\)$"),
    (BAD / "does-not-exist.eb", r": no such file$"),
])
def test_bad_input_is_one_clear_line(path, message):
    from eb_torchperf.errors import ConfigError
    from eb_torchperf.lint.parse import EasyconfigError, parse_path
    with pytest.raises(EasyconfigError, match=message) as caught:
        parse_path(str(path), "x86_64")
    assert isinstance(caught.value, ConfigError)
    assert "\n" not in str(caught.value)
    assert caught.value.path == str(path)
