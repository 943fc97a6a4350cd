"""Lint every PyTorch-*.eb of the installed easybuild-easyconfigs (needs the collection).

The pinned findings are those of easybuild-easyconfigs 5.4.1 (PINNED_COLLECTION_VERSION)
for an x86_64 target with an empty EasyBuild configuration: a CPU foss build, a CUDA
build, a wheel-based one and the oldest PyTorch in the collection.
"""

import os

import pytest

from eb_torchperf.lint import LintOptions, lint_paths

X86 = LintOptions(arch="x86_64")


@pytest.fixture(scope="module")
def collection(collection_root):
    """basename -> FileResult for every PyTorch-*.eb, linted once."""
    from eb_torchperf.lint.collection import pytorch_easyconfigs
    files = pytorch_easyconfigs(collection_root)
    assert files, "no PyTorch-*.eb below %s" % collection_root
    return {os.path.basename(r.path): r for r in lint_paths(files, options=X86)}


def rules_of(result):
    return {(f.rule_id, f.severity, f.line) for f in result.findings}


def test_every_pytorch_easyconfig_parses_and_gets_findings(collection):
    problems = {name: r.problem for name, r in collection.items() if r.problem}
    assert problems == {}
    assert [name for name, r in collection.items() if not r.findings] == []


def test_collection_size(collection, pinned_collection):
    assert len(collection) == 55
    assert sum(1 for name in collection if name.startswith("PyTorch-") and
               name.split("-")[1][0].isdigit()) == 28


PINNED = {
    # CPU source build with the foss toolchain: FlexiBLAS from foss/2025a.
    "PyTorch-2.9.1-foss-2025a.eb": {
        ("blas-not-mkl", "warning", 8), ("optarch-native", "info", 8)},
    # CUDA build without cuda_compute_capabilities: EasyBuild would stop.
    "PyTorch-2.9.1-foss-2025a-CUDA-12.8.0.eb": {
        ("cuda-cc-missing", "error", 3), ("blas-not-mkl", "warning", 9),
        ("optarch-native", "info", 9)},
    # Upstream wheel installed with PythonBundle.
    "PyTorch-2.9.1-foss-2025a-whl.eb": {("wheel-install", "info", 27)},
    # The oldest PyTorch in the collection, with max_failed_tests = 400.
    "PyTorch-1.12.0-foss-2022a.eb": {
        ("blas-not-mkl", "warning", 8), ("max-failed-tests-high", "warning", 159),
        ("optarch-native", "info", 8)},
    # CUDA 11.7 is not in PyTorch 1.12's release matrix; capabilities are set.
    "PyTorch-1.12.0-foss-2022a-CUDA-11.7.0.eb": {
        ("blas-not-mkl", "warning", 9), ("max-failed-tests-high", "warning", 180),
        ("optarch-native", "info", 9), ("cuda-version-untested", "info", 118)},
    # Uses PyTorch, does not build it.
    "PyTorch-Lightning-2.6.1-foss-2025a.eb": {("not-a-pytorch-build", "info", 19)},
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_findings(name, collection, pinned_collection):
    assert rules_of(collection[name]) == PINNED[name]


def test_cpu_foss_evidence(collection, pinned_collection):
    blas = collection["PyTorch-2.9.1-foss-2025a.eb"].findings[0]
    assert blas.evidence["blas_from"] == "toolchain foss/2025a"
    assert blas.evidence["flexiblas_version"] == "3.4.5"
    assert blas.evidence["flexiblas_default_backend"] == "OpenBLAS"
    assert blas.evidence["flexiblas_easyconfig"].endswith("FlexiBLAS-3.4.5-GCC-14.2.0.eb")
    assert "('imkl', '2025.1.0', '', SYSTEM)" in blas.advice


def test_oldest_is_pytorch_1_12_0(collection):
    from eb_torchperf.lint.common import version_tuple
    names = [n for n in collection if n.startswith("PyTorch-") and n.split("-")[1][0].isdigit()]
    oldest = min(names, key=lambda n: version_tuple(n.split("-")[1]))
    assert oldest.startswith("PyTorch-1.12.0-")


def test_aarch64_target(collection_root, pinned_collection):
    path = os.path.join(collection_root, "p", "PyTorch", "PyTorch-2.9.1-foss-2025a.eb")
    (result,) = lint_paths([path], arch="aarch64", heterogeneous=True)
    assert rules_of(result) == {("aarch64-no-acl", "warning", 238), ("optarch-native", "warning", 8)}
    assert result.findings[1].evidence["flags"] == "-mcpu=native"


def test_site_gpus_against_real_capabilities(collection_root, pinned_collection):
    path = os.path.join(collection_root, "p", "PyTorch", "PyTorch-1.12.0-foss-2022a-CUDA-11.7.0.eb")
    (result,) = lint_paths([path], arch="x86_64", site_gpus=("8.9", "9.0"))
    (uncovered,) = [f for f in result.findings if f.rule_id == "cuda-cc-uncovered"]
    assert uncovered.evidence["not_covered"] == ["9.0"]  # 8.9 runs the 8.6 cubins


def _write(tmp_path, toolchain, extra_deps=""):
    path = tmp_path / "PyTorch-2.9.1-test.eb"
    path.write_text(
        "name = 'PyTorch'\nversion = '2.9.1'\nhomepage = 'https://pytorch.org'\n"
        "description = 'test'\ntoolchain = %s\nsources = ['pytorch-v%%(version)s.tar.gz']\n"
        "dependencies = [('Python', '3.13.1'),%s]\nruntest = 'python test/run_test.py'\n"
        % (toolchain, extra_deps))
    return str(path)


def test_intel_toolchain_brings_imkl(tmp_path, collection_root):
    path = _write(tmp_path, "{'name': 'intel', 'version': '2025a'}")
    (result,) = lint_paths([path], arch="x86_64", check_dependencies=False)
    assert "blas-not-mkl" not in {f.rule_id for f in result.findings}
    assert result.problem is None


def test_imkl_dependency_fixes_the_foss_build(tmp_path, collection_root):
    path = _write(tmp_path, "{'name': 'foss', 'version': '2025a'}",
                  " ('imkl', '2025.1.0', '', SYSTEM)")
    (result,) = lint_paths([path], arch="x86_64")
    assert {f.rule_id for f in result.findings} == {"optarch-native"}
