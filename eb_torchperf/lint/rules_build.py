"""Rules about whether and how the build will run: CUDA targets, tests, dependencies.

Each rule is `(facts, options) -> list[Finding]` and is listed in `rules.RULES`.
"""

from typing import List, Tuple

from eb_torchperf.records.findings import Finding
from eb_torchperf.lint.common import finding
from eb_torchperf.lint.facts import EasyconfigFacts
from eb_torchperf.lint.options import LintOptions, capability_key

#: The PyTorch easyblock stops when CUDA is used and no compute capability is given,
#: neither in the easyconfig nor via --cuda-compute-capabilities (configure_step).
PYTORCH_EASYBLOCK = ("https://github.com/easybuilders/easybuild-easyblocks/blob/main/"
                     "easybuild/easyblocks/p/pytorch.py")
#: A cubin for X.Y runs on X.Z with Z >= Y only; "a" variants only on X.Y itself;
#: PTX is JIT-compiled for newer GPUs (CUDA C++ Programming Guide, "Binary Compatibility").
CUDA_COMPAT_SOURCE = ("https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"
                      "#binary-compatibility")
#: Default of the PyTorch easyblock's `max_failed_tests` (extra_options in p/pytorch.py).
MAX_FAILED_TESTS_DEFAULT = 10
#: Above this many allowed failures, warn.  About 0.1 % of the "~90k" tests the
#: PyTorch-1.12.0 easyconfigs cite for their 400; no 2.x easyconfig in
#: easybuild-easyconfigs 5.4.1 needs more than 60.  With hundreds allowed, a broken
#: BLAS or miscompiled kernel hides among the "flaky" failures.
MAX_FAILED_TESTS_WARN = 100
#: The EasyBuild error for missing dependencies comes from robot resolution.
ROBOT_SOURCE = "https://docs.easybuild.io/using-easybuild/#robot_search_path"
WHEEL_SOURCE = "https://download.pytorch.org/whl/torch/"


def is_cuda_build(facts: EasyconfigFacts) -> bool:
    """CUDA among the dependencies or toolchain components, or "-CUDA" in versionsuffix."""
    return ("CUDA" in facts.dependency_names() or "CUDA" in facts.toolchain.components
            or "-CUDA" in facts.versionsuffix)


def effective_capabilities(facts: EasyconfigFacts, options: LintOptions
                           ) -> Tuple[Tuple[str, ...], str]:
    """Compute capabilities the build will use and where they come from.

    `eb --cuda-compute-capabilities` (here: options, else the EasyBuild configuration)
    overrides the easyconfig parameter, as in the PyTorch easyblock.
    """
    if options.cuda_compute_capabilities:
        return tuple(options.cuda_compute_capabilities), "--cuda-compute-capabilities"
    if facts.eb_cuda_compute_capabilities:
        return facts.eb_cuda_compute_capabilities, "EasyBuild configuration"
    if facts.cuda_compute_capabilities:
        return facts.cuda_compute_capabilities, "easyconfig cuda_compute_capabilities"
    return (), ""


def covers(built: str, gpu: str) -> bool:
    """True when code built for compute capability `built` runs on a `gpu` of that capability.

    Source: CUDA_COMPAT_SOURCE (cubin: same major, minor not above the GPU's; "a": that
    exact capability; +PTX: JIT for any newer GPU).
    """
    b_major, b_minor, b_suffix, b_ptx = capability_key(built)
    g_major, g_minor = capability_key(gpu)[:2]
    if b_ptx and (g_major, g_minor) >= (b_major, b_minor):
        return True
    if b_suffix == "a":
        return (b_major, b_minor) == (g_major, g_minor)
    return b_major == g_major and b_minor <= g_minor


def rule_cuda_capabilities(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """CUDA source build with no compute capabilities, or ones missing the site's GPUs.

    Sources: PYTORCH_EASYBLOCK (refuses to build without them), CUDA_COMPAT_SOURCE.
    """
    if facts.install_kind != "source" or not is_cuda_build(facts):
        return []
    capabilities, origin = effective_capabilities(facts, options)
    cuda = facts.dependency("CUDA")
    line = facts.line("cuda_compute_capabilities") or facts.line("versionsuffix")
    if not capabilities:
        evidence = {"CUDA": cuda.version if cuda else "toolchain/versionsuffix",
                    "cuda_compute_capabilities": [], "eb_cuda_compute_capabilities": []}
        return [finding(facts, "cuda-cc-missing", "error",
                        "CUDA build without compute capabilities: EasyBuild will stop at the "
                        "configure step", evidence,
                        "List the compute capabilities of your GPUs, e.g. "
                        "`eb --cuda-compute-capabilities=8.0,9.0` (or cuda_compute_capabilities "
                        "in the EasyBuild configuration or in the easyconfig).",
                        PYTORCH_EASYBLOCK, line)]
    uncovered = [gpu for gpu in options.site_gpus
                 if not any(covers(built, gpu) for built in capabilities)]
    if not uncovered:
        return []
    evidence = {"cuda_compute_capabilities": list(capabilities), "from": origin,
                "site_gpus": list(options.site_gpus), "not_covered": uncovered}
    return [finding(facts, "cuda-cc-uncovered", "error",
                    "Compute capabilities %s do not cover the site's GPUs %s"
                    % (",".join(capabilities), ",".join(uncovered)), evidence,
                    "Add %s to the compute capabilities (%s); PyTorch otherwise fails with "
                    "'no kernel image is available' on those GPUs." % (",".join(uncovered), origin),
                    CUDA_COMPAT_SOURCE, line)]


def _is_easyblock_build(facts: EasyconfigFacts) -> bool:
    return facts.install_kind == "source" and facts.easyblock == "EB_PyTorch"


def rule_tests_skipped(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """The PyTorch test suite is skipped (`skipsteps` contains "test").

    Source: PYTORCH_EASYBLOCK test_step (the only check that the built torch works).
    """
    if not _is_easyblock_build(facts) or "test" not in facts.skipsteps:
        return []
    return [finding(facts, "tests-skipped", "warning",
                    "The PyTorch test suite is skipped (skipsteps contains 'test')",
                    {"skipsteps": list(facts.skipsteps)},
                    "Remove 'test' from skipsteps; skip per run with `eb --skip-test-step` "
                    "only when the same easyconfig passed its tests on this CPU/GPU type.",
                    PYTORCH_EASYBLOCK, facts.line("skipsteps"))]


def rule_runtest_not_command(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """`runtest` is not a test command (False, True or unset): the test step stops the build.

    Source: PYTORCH_EASYBLOCK test_step ("Do not set 'runtest' to False, use
    --skip-test-step instead" / "Make sure 'runtest' is set to a command").
    """
    if not _is_easyblock_build(facts) or "test" in facts.skipsteps:
        return []
    if isinstance(facts.runtest, str) and facts.runtest.strip():
        return []
    return [finding(facts, "runtest-not-command", "error",
                    "runtest is %r, not a test command: the PyTorch easyblock stops at the "
                    "test step" % (facts.runtest,), {"runtest": facts.runtest},
                    "Set runtest to the test command (see the PyTorch easyconfigs, "
                    "'%(python)s test/run_test.py ...'); to skip tests for one build use "
                    "`eb --skip-test-step`.", PYTORCH_EASYBLOCK, facts.line("runtest"))]


def rule_max_failed_tests(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """`max_failed_tests` above the easyblock default (info) or MAX_FAILED_TESTS_WARN (warning).

    Source: PYTORCH_EASYBLOCK extra_options; thresholds explained at the constants.
    """
    allowed = facts.max_failed_tests
    if not _is_easyblock_build(facts) or not isinstance(allowed, int):
        return []
    if allowed <= MAX_FAILED_TESTS_DEFAULT:
        return []
    severity = "warning" if allowed > MAX_FAILED_TESTS_WARN else "info"
    return [finding(facts, "max-failed-tests-high", severity,
                    "Up to %d failing tests are accepted (easyblock default %d)"
                    % (allowed, MAX_FAILED_TESTS_DEFAULT),
                    {"max_failed_tests": allowed, "easyblock_default": MAX_FAILED_TESTS_DEFAULT,
                     "warn_above": MAX_FAILED_TESTS_WARN},
                    "Lower max_failed_tests to what this build needs and read the failing test "
                    "names in the build log; failures in linalg/BLAS or CUDA tests point at the "
                    "build, not at flaky tests.", PYTORCH_EASYBLOCK,
                    facts.line("max_failed_tests"))]


def rule_missing_dependency(facts: EasyconfigFacts, options: LintOptions) -> List[Finding]:
    """Dependencies or the toolchain with no easyconfig in the robot path.

    Source: ROBOT_SOURCE (`eb --robot` stops with "Missing dependencies").
    """
    missing = facts.missing_dependencies
    if not missing:
        return []
    specs = [dep.spec() for dep in missing]
    return [finding(facts, "missing-dependency", "error",
                    "%d dependency easyconfig(s) not found in the robot path: %s"
                    % (len(specs), ", ".join(specs)),
                    {"missing": specs},
                    "Add the easyconfigs (or pass their directory with --robot-paths), or "
                    "install those modules first; otherwise `eb --robot` stops with "
                    "'Missing dependencies'.", ROBOT_SOURCE,
                    next((dep.line for dep in missing if dep.line), None))]
