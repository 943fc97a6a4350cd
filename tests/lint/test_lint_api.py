"""lint_paths and lint_easyconfig_object on hand-written easyconfigs (needs EasyBuild)."""

import json

import pytest

from eb_torchperf.lint import LintOptions, lint_easyconfig_object, lint_paths
from eb_torchperf.lint.api import find_easyconfigs
from lint_factories import BAD, DATA, ROBOT

pytestmark = pytest.mark.usefixtures("easybuild_ready")

OPTIONS = LintOptions(arch="x86_64", site_gpus=("9.0", "10.0"))


def rules_of(result):
    return [(f.rule_id, f.severity, f.line) for f in result.findings]


def test_find_easyconfigs_walks_directories_sorted():
    found = find_easyconfigs([str(BAD), str(DATA / "PyTorch-2.9.1-imkl.eb"), "missing.eb"])
    assert found == [str(BAD / "README-not-an-easyconfig.eb"), str(BAD / "no-name.eb"),
                     str(BAD / "syntax-error.eb"), str(DATA / "PyTorch-2.9.1-imkl.eb"),
                     "missing.eb"]


def test_bad_files_are_reported_and_the_others_still_linted():
    paths = [str(BAD / "syntax-error.eb"), str(DATA / "PyTorch-2.9.1-imkl.eb"),
             str(BAD / "no-name.eb"), str(DATA / "PyTorch-2.9.1-no-blas.eb")]
    results = lint_paths(paths, options=OPTIONS, robot_paths=[str(ROBOT)])
    assert [r.path for r in results] == paths
    assert [bool(r.problem) for r in results] == [True, False, True, False]
    assert results[0].problem == "cannot parse: '[' was never closed (<string>, line 3)"
    assert rules_of(results[1]) == [("runtest-not-command", "error", 14),
                                    ("max-failed-tests-high", "info", 15)]
    assert rules_of(results[3]) == [("blas-missing", "error", 6)]


@pytest.mark.parametrize("name, expected", [
    ("PyTorch-2.9.1-flexiblas-blis.eb", [("blas-not-mkl", "warning", 11),
                                         ("max-failed-tests-high", "warning", 14)]),
    ("PyTorch-2.9.1-CUDA-12.8.0.eb", [("cuda-cc-uncovered", "error", 15),
                                      ("blas-not-mkl", "warning", 13),
                                      ("tests-skipped", "warning", 16),
                                      ("python-version", "info", 12)]),
    ("PyTorch-2.9.1-missing-dep.eb", [("missing-dependency", "error", 11),
                                      ("blas-not-mkl", "warning", 10)]),
    ("PyTorch-2.9.1-whl.eb", [("wheel-install", "info", 16)]),
])
def test_findings_per_easyconfig(name, expected):
    (result,) = lint_paths([str(DATA / name)], options=OPTIONS)
    assert rules_of(result) == expected


def test_flexiblas_backend_reaches_the_finding():
    (result,) = lint_paths([str(DATA / "PyTorch-2.9.1-flexiblas-blis.eb")], options=OPTIONS)
    blas = result.findings[0]
    assert blas.title.startswith("CPU BLAS will be FlexiBLAS (default backend BLIS), not MKL")
    assert blas.evidence["flexiblas_easyconfig"] == str(ROBOT / "FlexiBLAS-9.9.9.eb")


def test_keyword_options_and_arch():
    (result,) = lint_paths([str(DATA / "PyTorch-2.9.1-acl.eb")], arch="aarch64")
    assert rules_of(result) == []
    (result,) = lint_paths([str(DATA / "PyTorch-2.9.1-no-blas.eb")], arch="aarch64")
    assert [f.rule_id for f in result.findings] == ["blas-missing", "aarch64-no-acl"]


def test_object_route_matches_path_route():
    from easybuild.framework.easyconfig.easyconfig import EasyConfig
    path = str(DATA / "PyTorch-2.9.1-CUDA-12.8.0.eb")
    options = LintOptions(arch="x86_64", site_gpus=("10.0",), check_dependencies=False)
    (by_path,) = lint_paths([path], options=options)
    by_object = lint_easyconfig_object(EasyConfig(path), options=options)
    assert [f.to_json() for f in by_object] == [f.to_json() for f in by_path.findings]


HOOKS = '''
import json
from eb_torchperf.lint import lint_easyconfig_object


def parse_hook(ec, *args, **kwargs):
    if ec.name == "PyTorch":
        found = lint_easyconfig_object(ec, arch="x86_64", site_gpus=("10.0",))
        with open(%r, "w") as handle:
            json.dump([f.to_json() for f in found], handle)
'''


def test_inside_a_parse_hook(tmp_path):
    """EasyBuild runs parse_hook before it parses dependencies: the lint must cope."""
    from easybuild.framework.easyconfig.easyconfig import EasyConfig
    from easybuild.tools.config import build_option, update_build_option
    out = tmp_path / "findings.json"
    hooks = tmp_path / "hooks.py"
    hooks.write_text(HOOKS % str(out))
    previous = build_option("hooks")
    update_build_option("hooks", str(hooks))
    try:
        EasyConfig(str(DATA / "PyTorch-2.9.1-CUDA-12.8.0.eb"))
    finally:
        update_build_option("hooks", previous)
    found = json.loads(out.read_text())
    assert [(f["rule_id"], f["line"]) for f in found] == [
        ("cuda-cc-uncovered", 15), ("blas-not-mkl", 13), ("tests-skipped", 16),
        ("python-version", 12)]


def test_hook_defaults_skip_the_dependency_lookup():
    from easybuild.framework.easyconfig.easyconfig import EasyConfig
    ec = EasyConfig(str(DATA / "PyTorch-2.9.1-missing-dep.eb"))
    assert "missing-dependency" not in [f.rule_id for f in lint_easyconfig_object(ec, arch="x86_64")]
    found = lint_easyconfig_object(ec, arch="x86_64", check_dependencies=True)
    assert "missing-dependency" in [f.rule_id for f in found]
