"""Version helpers and line locators (pure)."""

import pytest

from eb_torchperf.lint.common import major_minor, version_tuple
from eb_torchperf.lint.lines import dependency_lines, parameter_lines


@pytest.mark.parametrize("text, expected", [
    ("2.9.1", (2, 9, 1)),
    ("2.9.1+cpu", (2, 9, 1)),
    ("12.8.0", (12, 8, 0)),
    ("1.13.1rc1", (1, 13, 1)),
    ("2025.06", (2025, 6)),
    ("3", (3,)),
    ("system", ()),
])
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected


def test_version_tuple_orders_1_10_above_1_9():
    assert version_tuple("1.10.0") > version_tuple("1.9.1")


@pytest.mark.parametrize("text, expected", [("3.13.1", "3.13"), ("12.8", "12.8"), ("2", "2")])
def test_major_minor(text, expected):
    assert major_minor(text) == expected


EASYCONFIG = """\
name = 'PyTorch'
version = '2.9.1'
toolchain = {'name': 'foss', 'version': '2025a'}
builddependencies = [('CMake', '3.31.3')]
dependencies = [
    ('CUDA', '12.8.0', '', SYSTEM),
    ('Python', '3.13.1'),
]
if ARCH == 'aarch64':
    dependencies.append(('ArmComputeLibrary', '25.02'))
dependencies += [('imkl', '2025.1.0', '', SYSTEM)]
local_tuple = ('NotADependency', '1.0')
max_failed_tests = 10
max_failed_tests = 20
"""


def test_parameter_lines_first_assignment():
    lines = parameter_lines(EASYCONFIG)
    assert lines["name"] == 1
    assert lines["toolchain"] == 3
    assert lines["dependencies"] == 5
    assert lines["max_failed_tests"] == 13


def test_dependency_lines_follow_appends_and_augmented_assignments():
    lines = dependency_lines(EASYCONFIG)
    assert lines == {"CMake": 4, "CUDA": 6, "Python": 7, "ArmComputeLibrary": 10, "imkl": 11}


def test_non_python_text_gives_no_lines():
    assert parameter_lines("this is : not python") == {}
    assert dependency_lines("this is : not python") == {}
