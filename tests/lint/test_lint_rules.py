"""The rule registry and the informational rules (pure)."""

from eb_torchperf.records.findings import SEVERITIES
from eb_torchperf.lint.rules import RULES, lint_facts, rule_install_kind, rule_parse_warnings
from lint_factories import deps, make_facts


def test_every_rule_is_documented():
    for rule in RULES:
        assert rule.__doc__ and rule.__doc__.strip(), rule.__name__


def test_lint_facts_sorts_most_severe_first(x86):
    facts = make_facts(runtest=False, max_failed_tests=500)
    found = lint_facts(facts, x86)
    assert [(f.severity, f.rule_id) for f in found] == [
        ("error", "runtest-not-command"),
        ("warning", "blas-not-mkl"),
        ("warning", "max-failed-tests-high"),
        ("info", "optarch-native"),
    ]


def test_all_findings_have_https_sources_and_known_severities(x86):
    facts = make_facts(runtest=None, skipsteps=("test",), parse_warnings=("x",),
                       versionsuffix="-CUDA-12.9.1",
                       dependencies=deps(("CUDA", "12.9.1"), ("Python", "3.15.0")))
    found = lint_facts(facts, x86)
    assert len(found) >= 6
    for f in found:
        assert f.source.startswith("https://"), f.rule_id
        assert f.severity in SEVERITIES
        assert f.subject == facts.path


def test_wheel_install_is_reported(x86):
    facts = make_facts(install_kind="wheel", easyblock="PythonBundle",
                       torch_wheel="torch-2.9.1%2Bcpu-cp313-cp313-manylinux_2_28_x86_64.whl",
                       lines={"exts_list": 27})
    (found,) = rule_install_kind(facts, x86)
    assert (found.rule_id, found.severity, found.line) == ("wheel-install", "info", 27)
    assert found.evidence["wheel"].startswith("torch-2.9.1%2Bcpu")


def test_dependent_easyconfig_points_at_pytorch(x86):
    facts = make_facts(name="PyTorch-Lightning", install_kind="dependent",
                       dependencies=deps(("PyTorch", "2.9.1", 15)))
    (found,) = rule_install_kind(facts, x86)
    assert (found.rule_id, found.line) == ("not-a-pytorch-build", 15)
    assert found.title == "Uses PyTorch PyTorch-2.9.1 but does not build it"
    assert lint_facts(facts, x86) == (found,)


def test_parse_warnings_become_info_findings(x86):
    found = rule_parse_warnings(make_facts(parse_warnings=("a", "b")), x86)
    assert [(f.rule_id, f.severity, f.title) for f in found] == [
        ("easybuild-warning", "info", "EasyBuild: a"), ("easybuild-warning", "info", "EasyBuild: b")]
