"""BLAS and MKL rules (classes 1, 2, 5, 12) on real config texts and probes."""

import pytest

from eb_torchperf.analysis.compare import compare
from eb_torchperf.diagnosis.packaging_advice import advise
from eb_torchperf.diagnosis.rules import blas
from eb_torchperf.diagnosis.facts import torch_blas

from auditcases import (DEBIAN, EASYBUILD, FLEXIBLAS_MAPPED, FLEXIBLAS_POOLS, WHEEL_291,
                       WHEEL_2130, comparisons, golden_probe, golden_result, probe_from_config,
                       real_probe, target_only, with_facts)

GEMM = {"n": 512}


def _easybuild():
    return probe_from_config(EASYBUILD, mapped_libraries__libraries=FLEXIBLAS_MAPPED,
                             threadpools__pools=FLEXIBLAS_POOLS)


def _wheel_291():
    return probe_from_config(WHEEL_291, label="reference")


def test_flexiblas_with_gemm_at_30_percent_is_an_error():
    found = blas.blas_not_mkl(_easybuild(), _wheel_291(),
                              comparisons(("matmul_fp32", GEMM, 0.30)))
    assert [(f.rule_id, f.severity) for f in found] == [("blas-not-mkl", "error")]
    evidence = found[0].evidence
    assert evidence["BLAS_INFO"] == "flexi"
    assert evidence["BLAS library loaded"].startswith("FlexiBLAS → OPENBLAS " + FLEXIBLAS_MAPPED[0])
    assert evidence["GEMM relative OPS, geometric mean"] == {"value": 0.30, "unit": "ratio"}
    row = evidence["relative OPS matmul_fp32 n=512"]
    assert (row["value"], row["unit"]) == (0.30, "ratio") and row["low"] <= 0.30 <= row["high"]
    assert found[0].title.endswith("GEMM at 30.0 % of the reference")
    assert "FLEXIBLAS" in found[0].advice and "imkl" in found[0].advice
    assert found[0].source == "https://github.com/easybuilders/easybuild/issues/931"


def test_flexiblas_with_gemm_at_98_percent_is_info():
    found = blas.blas_not_mkl(_easybuild(), _wheel_291(), comparisons(("matmul_fp32", GEMM, 0.98)))
    assert found[0].severity == "info"


def test_gemm_bounds_either_side_of_50_and_90_percent():
    target, reference = _easybuild(), _wheel_291()
    severity = {ratio: blas.blas_not_mkl(target, reference,
                                         comparisons(("linear", {}, ratio)))[0].severity
                for ratio in (0.45, 0.55, 0.85, 0.95)}
    assert severity == {0.45: "error", 0.55: "warning", 0.85: "warning", 0.95: "info"}


def test_gemm_family_is_the_geometric_mean_including_single_thread_gemm():
    found = blas.blas_not_mkl(_easybuild(), _wheel_291(), comparisons(
        ("matmul_fp32", GEMM, 0.8), ("thread_scaling", {"n": 512, "threads": 1}, 0.2),
        ("thread_scaling", {"n": 512, "threads": "all"}, 0.01), ("layernorm", {}, 0.01)))
    # sqrt(0.8 * 0.2) = 0.4; the 'all threads' row and non-GEMM rows do not count
    assert found[0].evidence["GEMM relative OPS, geometric mean"]["value"] == pytest.approx(0.4)
    assert found[0].severity == "error"


def test_debian_reference_blas_from_the_real_audit():
    result = golden_result()
    found = blas.blas_not_mkl(result.target, result.reference, compare(result))
    assert found[0].severity == "error"
    assert found[0].evidence["BLAS library loaded"] == (
        "reference BLAS /usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0")
    assert "libblas.so.3 (Debian/Ubuntu alternatives) can be switched" in found[0].advice
    # the command itself opens the remedy of a Debian package, once (packaging_advice)
    debian = advise(found[0], "debian").advice
    assert debian.split("\n")[0].endswith("`update-alternatives --config "
                                           "libblas.so.3-x86_64-linux-gnu`.")
    assert debian.count("update-alternatives") == 1
    assert found[0].evidence["upstream"] == "reference torch 2.13.0+cpu: BLAS_INFO=mkl"


def test_without_reference_the_gemm_fraction_of_peak_grades():
    debian = golden_probe("target")  # 1 thread, 2.596 GHz, Zen 4: 83.1 GFLOP/s per core
    low = blas.blas_not_mkl(debian, None, [target_only("matmul_fp32", GEMM, 5.86)])[0]
    assert low.severity == "error"
    assert low.evidence["fraction of nominal peak"]["unit"] == "fraction"
    assert round(low.evidence["fraction of nominal peak"]["value"], 3) == 0.071
    assert low.evidence["nominal peak"] == "1 core x 2.60 GHz (cpu MHz) x 32 FLOP/cycle (avx512)"
    assert low.evidence["upstream"] == ("upstream wheel torch 1.13 (linux-x86_64): BLAS_INFO=mkl")
    middle = blas.blas_not_mkl(debian, None, [target_only("matmul_fp32", GEMM, 25.0)])[0]
    high = blas.blas_not_mkl(debian, None, [target_only("matmul_fp32", GEMM, 40.0)])[0]
    assert (middle.severity, high.severity) == ("warning", "info")


def test_without_any_gemm_measurement_the_config_alone_warns():
    found = blas.blas_not_mkl(_easybuild(), None, [])
    assert found[0].severity == "warning"
    assert found[0].evidence["GEMM measured"] == "no"


def test_mkl_builds_and_non_x86_hosts_have_no_blas_finding():
    assert blas.blas_not_mkl(golden_probe("reference"), None, []) == []
    arm = with_facts(_easybuild(), cpu__machine="aarch64")
    assert blas.blas_not_mkl(arm, None, []) == []


def test_numpy_openblas_is_not_torchs_blas():
    wheel = golden_probe("reference")
    assert torch_blas(wheel).kind == "MKL (linked into torch)"


def test_mkl_missing_on_debian_and_easybuild_but_not_the_wheel():
    debian = golden_probe("target")
    found = blas.mkl_missing(debian, golden_probe("reference"), [])
    assert [(f.rule_id, f.severity) for f in found] == [("mkl-missing", "warning")]
    assert found[0].evidence["USE_MKL"] == "not printed; no MKL line in torch.__config__.show()"
    assert found[0].evidence["torch.backends.mkl.is_available()"] is False
    eb = blas.mkl_missing(_easybuild(), None, [])
    assert eb[0].evidence["upstream"] == "upstream wheel torch 2.9 (linux-x86_64): MKL yes"
    assert blas.mkl_missing(probe_from_config(WHEEL_2130), None, []) == []


def test_openblas_pthreads_beside_two_openmp_threads_warns():
    probe = real_probe("debian-openblas-pthread-omp2")
    assert torch_blas(probe).describe() == (
        "OpenBLAS /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 (pthreads, 2 threads)")
    found = blas.blas_pthreads_oversubscription(probe, None, [])
    assert [(f.rule_id, f.severity) for f in found] == [("blas-pthreads-with-openmp", "warning")]
    assert found[0].evidence["threads that can run at once"] == 3
    assert found[0].evidence["allowed cores"] == 2


def test_pthreads_rule_needs_more_than_one_openmp_thread_and_a_non_mkl_blas():
    one_thread = with_facts(real_probe("debian-openblas-pthread-omp2"), torch__intra_op_threads=1,
                            threadpools__pools=[
                                dict(p, num_threads=1) if p["user_api"] == "openmp" else p
                                for p in real_probe("debian-openblas-pthread-omp2")
                                .fact("threadpools", "pools")])
    assert blas.blas_pthreads_oversubscription(one_thread, None, []) == []
    assert blas.blas_pthreads_oversubscription(golden_probe("reference"), None, []) == []


def test_mkl_on_amd_is_information_with_the_gemm_rate():
    wheel = golden_probe("reference")
    found = blas.mkl_on_amd(wheel, None, [target_only("matmul_fp32", GEMM, 97.0)])
    assert [(f.rule_id, f.severity) for f in found] == [("mkl-on-amd", "info")]
    assert found[0].evidence["target rate matmul_fp32 n=512"] == {"value": 97.0, "unit": "GFLOP/s"}
    assert found[0].evidence["MKL"] == "2024.2"
    intel = with_facts(wheel, cpu__vendor="GenuineIntel")
    assert blas.mkl_on_amd(intel, None, []) == []
    assert blas.mkl_on_amd(probe_from_config(DEBIAN), None, []) == []


def test_a_models_only_audit_is_graded_by_the_models_geometric_mean():
    # issue 17: Debian's torch 1.13 ran the models at 7.7 % of the wheel, and without a
    # GEMM row the finding read "warning" (exit 0) where the quick suite's read "error"
    rows = comparisons(("resnet50_infer", {}, 0.09), ("bert_infer", {}, 0.02),
                       ("bert_train", {}, 0.03))
    (found,) = blas.blas_not_mkl(_easybuild(), _wheel_291(), rows)
    assert found.severity == "error"
    geo = found.evidence["models relative OPS, geometric mean"]
    assert geo["value"] == pytest.approx((0.09 * 0.02 * 0.03) ** (1 / 3))
    assert found.evidence["GEMM measured"] == "no (models suite)"
    milder = blas.blas_not_mkl(_easybuild(), _wheel_291(), comparisons(
        ("resnet50_infer", {}, 0.8), ("bert_infer", {}, 0.8)))[0]
    assert milder.severity == "warning"
    # a GEMM row, when measured, still decides
    both = blas.blas_not_mkl(_easybuild(), _wheel_291(), rows + comparisons(
        ("matmul_fp32", GEMM, 0.98)))[0]
    assert both.severity == "info"
