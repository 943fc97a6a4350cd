"""PyTorch release compatibility matrix rules (pure)."""

import pytest

from eb_torchperf.lint.matrix import (MATRIX_SOURCE, RELEASES, SETUP_PY_SOURCE, python_verdict,
                                      rule_cuda_version, rule_python_version)
from eb_torchperf.lint.common import version_tuple
from lint_factories import deps, make_facts


def test_matrix_rows_are_consistent():
    for minor, release in RELEASES.items():
        assert version_tuple(release.python_min) <= version_tuple(release.python_max), minor
        if release.python_experimental:
            assert version_tuple(release.python_experimental) > version_tuple(release.python_max)
        assert release.cuda, minor


@pytest.mark.parametrize("python, expected", [
    ("3.9.18", ("error", "below the minimum 3.10")),
    ("3.10.0", None),
    ("3.13.5", None),
    ("3.14.0", ("info", "experimental upstream (stable up to 3.13)")),
    ("3.15.0", ("warning", "above the tested maximum 3.13")),
])
def test_python_verdict_for_2_9(python, expected):
    assert python_verdict(python, RELEASES["2.9"]) == expected


def test_no_experimental_python_for_2_8():
    assert python_verdict("3.14.0", RELEASES["2.8"]) == ("warning", "above the tested maximum 3.13")


def test_python_below_minimum_cites_setup_py(x86):
    facts = make_facts(dependencies=deps(("Python", "3.9.6", 20)))
    (found,) = rule_python_version(facts, x86)
    assert (found.rule_id, found.severity, found.line) == ("python-version", "error", 20)
    assert found.title == "Python 3.9.6 is below the minimum 3.10 for PyTorch 2.9"
    assert found.source == SETUP_PY_SOURCE


def test_python_rule_silent_for_unlisted_releases_and_non_builds(x86):
    old = make_facts(version="1.11.0", dependencies=deps(("Python", "2.7.18")))
    assert rule_python_version(old, x86) == []
    dependent = make_facts(install_kind="dependent", dependencies=deps(("Python", "3.9.6")))
    assert rule_python_version(dependent, x86) == []


def test_python_rule_applies_to_wheels(x86):
    facts = make_facts(install_kind="wheel", dependencies=deps(("Python", "3.15.1")))
    assert [f.severity for f in rule_python_version(facts, x86)] == ["warning"]


@pytest.mark.parametrize("cuda, expected", [("12.8.0", []), ("12.9.1", ["info"]),
                                            ("13.0.2", [])])
def test_cuda_version_for_2_9(cuda, expected, x86):
    facts = make_facts(dependencies=deps(("CUDA", cuda, 21)))
    found = rule_cuda_version(facts, x86)
    assert [f.severity for f in found] == expected
    assert all(f.source == MATRIX_SOURCE and f.line == 21 for f in found)
