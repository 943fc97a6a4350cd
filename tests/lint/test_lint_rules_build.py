"""CUDA capability, test-step and dependency rules at their boundaries (pure)."""

import pytest

from eb_torchperf.lint.facts import Dependency
from eb_torchperf.lint.options import LintOptions
from eb_torchperf.lint.rules_build import (MAX_FAILED_TESTS_DEFAULT, MAX_FAILED_TESTS_WARN,
                                           covers, effective_capabilities, is_cuda_build,
                                           rule_cuda_capabilities, rule_max_failed_tests,
                                           rule_missing_dependency, rule_runtest_not_command,
                                           rule_tests_skipped)
from lint_factories import deps, make_facts


def cuda_facts(**overrides):
    values = {"versionsuffix": "-CUDA-12.8.0",
              "dependencies": deps(("CUDA", "12.8.0", 21), ("Python", "3.13.1", 22))}
    values.update(overrides)
    return make_facts(**values)


@pytest.mark.parametrize("built, gpu, expected", [
    ("8.0", "8.0", True),
    ("8.0", "8.6", True),     # same major, GPU minor higher: cubin runs
    ("8.6", "8.0", False),    # GPU minor lower: does not
    ("9.0", "10.0", False),   # other major
    ("9.0a", "9.0", True),
    ("10.0a", "10.3", False),  # arch-specific cubins run only on that capability
    ("9.0+PTX", "12.0", True),  # PTX JIT-compiles for newer GPUs
    ("9.0+PTX", "8.9", False),
])
def test_covers(built, gpu, expected):
    assert covers(built, gpu) is expected


def test_is_cuda_build_by_dependency_or_versionsuffix():
    assert is_cuda_build(cuda_facts())
    assert is_cuda_build(make_facts(versionsuffix="-CUDA-12.8.0"))
    assert not is_cuda_build(make_facts())


def test_capabilities_precedence():
    facts = cuda_facts(cuda_compute_capabilities=("7.0",), eb_cuda_compute_capabilities=("8.0",))
    assert effective_capabilities(facts, LintOptions(arch="x86_64")) == (
        ("8.0",), "EasyBuild configuration")
    assert effective_capabilities(facts, LintOptions(arch="x86_64",
                                                     cuda_compute_capabilities=("9.0",))) == (
        ("9.0",), "--cuda-compute-capabilities")
    facts = cuda_facts(cuda_compute_capabilities=("7.0",))
    assert effective_capabilities(facts, LintOptions(arch="x86_64")) == (
        ("7.0",), "easyconfig cuda_compute_capabilities")


def test_cuda_without_capabilities_is_an_error(x86):
    (found,) = rule_cuda_capabilities(cuda_facts(), x86)
    assert (found.rule_id, found.severity, found.line) == ("cuda-cc-missing", "error", 43)
    assert found.evidence["CUDA"] == "12.8.0"
    assert "--cuda-compute-capabilities" in found.advice


def test_capabilities_given_on_the_command_line_satisfy_easybuild():
    options = LintOptions(arch="x86_64", cuda_compute_capabilities=("9.0",))
    assert rule_cuda_capabilities(cuda_facts(), options) == []


def test_capabilities_missing_a_site_gpu():
    options = LintOptions(arch="x86_64", site_gpus=("8.0", "9.0", "10.0"))
    (found,) = rule_cuda_capabilities(cuda_facts(cuda_compute_capabilities=("8.0", "9.0")),
                                      options)
    assert (found.rule_id, found.severity) == ("cuda-cc-uncovered", "error")
    assert found.evidence["not_covered"] == ["10.0"]
    assert found.title == "Compute capabilities 8.0,9.0 do not cover the site's GPUs 10.0"


def test_capabilities_covering_the_site_gpus():
    options = LintOptions(arch="x86_64", site_gpus=("8.6", "9.0"))
    assert rule_cuda_capabilities(cuda_facts(cuda_compute_capabilities=("8.0", "9.0")),
                                  options) == []


def test_cuda_rule_ignores_cpu_builds_and_wheels(x86):
    assert rule_cuda_capabilities(make_facts(), x86) == []
    assert rule_cuda_capabilities(cuda_facts(install_kind="wheel"), x86) == []


def test_tests_skipped_is_a_warning(x86):
    (found,) = rule_tests_skipped(make_facts(skipsteps=("test",)), x86)
    assert (found.rule_id, found.severity, found.line) == ("tests-skipped", "warning", 42)
    assert rule_tests_skipped(make_facts(skipsteps=("sanitycheck",)), x86) == []


@pytest.mark.parametrize("runtest, expected", [
    (False, ["runtest-not-command"]),
    (True, ["runtest-not-command"]),
    (None, ["runtest-not-command"]),
    ("  ", ["runtest-not-command"]),
    ("%(python)s test/run_test.py", []),
])
def test_runtest_must_be_a_command(runtest, expected, x86):
    assert [f.rule_id for f in rule_runtest_not_command(make_facts(runtest=runtest), x86)] == expected


def test_runtest_false_with_skipped_test_step_is_only_the_skip(x86):
    facts = make_facts(runtest=False, skipsteps=("test",))
    assert rule_runtest_not_command(facts, x86) == []


def test_runtest_rule_only_for_the_pytorch_easyblock(x86):
    assert rule_runtest_not_command(make_facts(runtest=None, easyblock="PythonPackage"), x86) == []


@pytest.mark.parametrize("allowed, expected", [
    (MAX_FAILED_TESTS_DEFAULT, []),
    (MAX_FAILED_TESTS_DEFAULT + 1, ["info"]),
    (MAX_FAILED_TESTS_WARN, ["info"]),
    (MAX_FAILED_TESTS_WARN + 1, ["warning"]),
    (None, []),
])
def test_max_failed_tests_thresholds(allowed, expected, x86):
    found = rule_max_failed_tests(make_facts(max_failed_tests=allowed), x86)
    assert [f.severity for f in found] == expected
    assert all(f.line == 41 and f.evidence["max_failed_tests"] == allowed for f in found)


def test_thresholds_keep_their_documented_values():
    assert (MAX_FAILED_TESTS_DEFAULT, MAX_FAILED_TESTS_WARN) == (10, 100)


def test_missing_dependencies_in_one_finding(x86):
    missing = (Dependency("foss", "1999z", toolchain="system/system", line=8),
               Dependency("NoSuchLib", "1.0", toolchain="foss/1999z", line=12))
    (found,) = rule_missing_dependency(make_facts(missing_dependencies=missing), x86)
    assert (found.rule_id, found.severity, found.line) == ("missing-dependency", "error", 8)
    assert found.evidence["missing"] == ["foss-1999z (system/system)", "NoSuchLib-1.0 (foss/1999z)"]
    assert rule_missing_dependency(make_facts(), x86) == []
