"""The lint rule registry: every rule is `(facts, options) -> list[Finding]`.

Rules are pure functions of `EasyconfigFacts` and `LintOptions`, live in small modules
by topic, and cite their sources in their docstrings; `lint_facts` runs them all.
"""

from typing import Callable, List, Tuple

from eb_torchperf.records.findings import Finding, sort_findings
from eb_torchperf.lint.common import finding
from eb_torchperf.lint.facts import EasyconfigFacts
from eb_torchperf.lint.matrix import rule_cuda_version, rule_python_version
from eb_torchperf.lint.options import LintOptions
from eb_torchperf.lint.rules_build import (WHEEL_SOURCE, rule_cuda_capabilities,
                                           rule_max_failed_tests, rule_missing_dependency,
                                           rule_runtest_not_command, rule_tests_skipped)
from eb_torchperf.lint.rules_cpu import (rule_aarch64_no_acl, rule_blas_missing,
                                         rule_blas_not_mkl, rule_optarch_native)

Rule = Callable[[EasyconfigFacts, LintOptions], List[Finding]]

#: EasyBuild's own documentation of easyconfig parsing (for its parse warnings).
EASYCONFIG_DOCS = "https://docs.easybuild.io/writing-easyconfig-files/"


def rule_install_kind(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """Say what was linted when it is not a PyTorch source build (info).

    A wheel install brings the upstream binary (its BLAS, oneDNN backends and CUDA
    architectures), so build-time rules do not apply; other easyconfigs only use PyTorch.
    """
    if facts.install_kind == "source":
        return []
    if facts.install_kind == "wheel":
        return [finding(facts, "wheel-install", "info",
                        "Installs the upstream torch wheel %s: BLAS, oneDNN backends and CUDA "
                        "architectures are the wheel's; build-time rules do not apply"
                        % facts.torch_wheel, {"wheel": facts.torch_wheel,
                                              "easyblock": facts.easyblock},
                        "Nothing to change for CPU BLAS: the upstream wheels bring MKL (x86_64) "
                        "or the Arm Compute Library (aarch64) themselves.", WHEEL_SOURCE,
                        facts.line("exts_list") or facts.line("sources"))]
    pytorch = facts.dependency("PyTorch")
    title = ("Uses PyTorch %s but does not build it" % pytorch.spec() if pytorch else
             "Neither builds, installs nor directly depends on PyTorch")
    return [finding(facts, "not-a-pytorch-build", "info", title,
                    {"install_kind": facts.install_kind,
                     "pytorch_dependency": pytorch.spec() if pytorch else None},
                    "Lint the PyTorch easyconfig this one depends on; its findings apply here.",
                    EASYCONFIG_DOCS, pytorch.line if pytorch else None)]


def rule_parse_warnings(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """Warnings EasyBuild printed while parsing this easyconfig (info, one each)."""
    return [finding(facts, "easybuild-warning", "info", "EasyBuild: %s" % warning,
                    {"warning": warning}, "Act on EasyBuild's warning.", EASYCONFIG_DOCS)
            for warning in facts.parse_warnings]


#: All rules, in the order their findings are produced (reports sort by severity).
RULES: Tuple[Rule, ...] = (
    rule_blas_not_mkl,
    rule_blas_missing,
    rule_aarch64_no_acl,
    rule_optarch_native,
    rule_cuda_capabilities,
    rule_tests_skipped,
    rule_runtest_not_command,
    rule_max_failed_tests,
    rule_python_version,
    rule_cuda_version,
    rule_missing_dependency,
    rule_install_kind,
    rule_parse_warnings,
)


def lint_facts(facts: EasyconfigFacts, options: LintOptions,
               rules: Tuple[Rule, ...] = RULES) -> Tuple[Finding, ...]:
    """Run `rules` on one easyconfig's facts.

    Returns:
        The findings, most severe first (findings.sort_findings).
    """
    found: List[Finding] = []
    for rule in rules:
        found.extend(rule(facts, options))
    return sort_findings(found)
