"""Build-config rules (classes 3, 8, 9, 10, 11, 18) on real config texts and probes."""

import pytest

from eb_torchperf.analysis.compare import compare_pair
from eb_torchperf.diagnosis.rules import build

from auditcases import (DEBIAN, EASYBUILD, WHEEL_291, WHEEL_1131, WHEEL_2110, WHEEL_2130,
                       bench_pair, comparisons, config_text, golden_probe, probe_from_config,
                       real_probe, with_facts)


def _wheel_2130_with(old, new, **changes):
    """The real 2.13.0 wheel text with one edit (a hypothetical source build of it)."""
    probe = probe_from_config(WHEEL_2130, **changes)
    text = config_text(WHEEL_2130)
    assert old in text
    return with_facts(probe, torch__config_show=text.replace(old, new))


# -- class 3: oneDNN ------------------------------------------------------------------

def test_onednn_off_graded_by_the_convolution_ratio():
    target = _wheel_2130_with("USE_MKLDNN=ON", "USE_MKLDNN=OFF")
    reference = probe_from_config(WHEEL_2130, label="reference")
    low = build.onednn_off(target, reference, comparisons(("conv3x3", {}, 0.40)))
    assert [(f.rule_id, f.severity) for f in low] == [("onednn-off", "error")]
    assert low[0].evidence["USE_MKLDNN"] == "OFF"
    assert build.onednn_off(target, reference, comparisons(("conv3x3", {}, 0.95)))[0].severity == "info"
    assert build.onednn_off(target, reference, [])[0].severity == "warning"
    assert "custom_opts" in low[0].advice


def test_onednn_disabled_at_run_time_and_not_on_real_builds():
    disabled = with_facts(probe_from_config(WHEEL_2130), torch__mkldnn_enabled=False)
    found = build.onednn_off(disabled, None, [])
    assert found[0].evidence == {"torch.backends.mkldnn.enabled": False}
    for name in (DEBIAN, EASYBUILD, WHEEL_1131, WHEEL_2130):
        assert build.onednn_off(probe_from_config(name), None, []) == []


# -- class 8: CPU capability ------------------------------------------------------------

def test_debian_avx2_on_avx512_is_info_because_upstream_1_13_selects_avx2_too():
    found = build.cpu_capability_low(golden_probe("target"), golden_probe("reference"), [])
    assert [(f.rule_id, f.severity) for f in found] == [("cpu-capability-low", "info")]
    assert found[0].evidence["upstream of the same version"] == (
        "upstream wheel torch 1.13 (linux-x86_64) selects AVX2")
    assert found[0].evidence["CPU supports"] == "AVX512"


def test_capability_forced_by_aten_cpu_capability_warns():
    probe = real_probe("wheel-aten-avx2")
    found = build.cpu_capability_low(probe, None, [])
    assert found[0].severity == "warning"
    assert found[0].title.endswith("(forced by ATEN_CPU_CAPABILITY=avx2)")
    assert found[0].evidence["CPU capability in use"] == "AVX2"


def test_forced_capability_with_slow_vectorised_kernels_against_same_version_is_an_error():
    probe = real_probe("wheel-aten-avx2")
    reference = golden_probe("reference")
    slow = build.cpu_capability_low(probe, reference, comparisons(("layernorm", {}, 0.45)))
    fine = build.cpu_capability_low(probe, reference, comparisons(("layernorm", {}, 0.55)))
    assert (slow[0].severity, fine[0].severity) == ("error", "warning")
    # a reference of another torch version does not grade (version effects mix in)
    other = build.cpu_capability_low(probe, golden_probe("target"),
                                     comparisons(("layernorm", {}, 0.45)))
    assert other[0].severity == "warning"


def test_capability_below_the_same_version_wheel_warns():
    probe = _wheel_2130_with("CPU capability usage: AVX512", "CPU capability usage: AVX2")
    found = build.cpu_capability_low(probe, None, [])
    assert found[0].severity == "warning"
    assert found[0].evidence["upstream of the same version"] == (
        "upstream wheel torch 2.13 (linux-x86_64) selects AVX512")


def test_capability_at_the_cpu_maximum_or_unknown_cpu_gives_nothing():
    assert build.cpu_capability_low(golden_probe("reference"), None, []) == []
    avx2_cpu = with_facts(golden_probe("target"), cpu__flags=["avx", "avx2", "fma"])
    assert build.cpu_capability_low(avx2_cpu, None, []) == []
    arm = with_facts(golden_probe("target"), cpu__machine="aarch64")
    assert build.cpu_capability_low(arm, None, []) == []


# -- class 9: debug / unoptimised ----------------------------------------------------------

@pytest.mark.parametrize("old, new, severity, key, value", [
    ("BUILD_TYPE=Release", "BUILD_TYPE=Debug", "error", "BUILD_TYPE", "Debug"),
    (" -O2 -fPIC", " -O0 -fPIC", "error", "CXX_FLAGS -O level", "-O0"),
    (" -O2 -fPIC", " -Og -fPIC", "warning", "CXX_FLAGS -O level", "-Og"),
    (" -O2 -fPIC", " -fPIC", "warning", "CXX_FLAGS -O level", "none (compiler default -O0)"),
])
def test_debug_and_unoptimised_builds(old, new, severity, key, value):
    found = build.debug_build(_wheel_2130_with(old, new), None, [])
    assert [(f.rule_id, f.severity) for f in found] == [("debug-build", severity)]
    assert found[0].evidence[key] == value


def test_torch_version_debug_is_an_error_and_real_builds_are_optimised():
    debug = with_facts(probe_from_config(WHEEL_2130), torch__debug=True)
    assert build.debug_build(debug, None, [])[0].evidence["torch.version.debug"] is True
    for name in (DEBIAN, EASYBUILD, WHEEL_291, WHEEL_1131, WHEEL_2110, WHEEL_2130):
        assert build.debug_build(probe_from_config(name), None, []) == [], name


# -- class 10: -march=native ---------------------------------------------------------------

def test_march_native_in_the_easybuild_build():
    found = build.march_native(probe_from_config(EASYBUILD), None, [])
    assert [(f.rule_id, f.severity) for f in found] == [("march-native", "warning")]
    assert found[0].evidence["CXX_FLAGS contains"] == "-march=native"
    assert "--optarch=GENERIC" in found[0].advice
    for name in (DEBIAN, WHEEL_291, WHEEL_2130):
        assert build.march_native(probe_from_config(name), None, []) == []


def test_mcpu_native_is_found_too():
    probe = _wheel_2130_with(" -O2 -fPIC", " -O2 -mcpu=native -fPIC")
    assert build.march_native(probe, None, [])[0].evidence["CXX_FLAGS contains"] == "-mcpu=native"


# -- class 11: OpenMP / thread scaling ------------------------------------------------------

def _scaling(target_speedup, reference_speedup):
    """thread_scaling comparisons whose 1 -> all threads speed-ups are as given."""
    rows = []
    for threads, target_s, reference_s in ((1, 1e-3, 1e-3),
                                           ("all", 1e-3 / target_speedup, 1e-3 / reference_speedup)):
        target, reference = bench_pair("thread_scaling", {"n": 512, "threads": threads},
                                       reference_s / target_s, reference_s=reference_s)
        rows.append(compare_pair([target], [reference]))
    return rows


def test_native_thread_pool_without_scaling_is_an_error():
    probe = with_facts(probe_from_config(WHEEL_2130),
                       torch__parallel_info="ATen parallel backend: native thread pool\n")
    assert build.no_openmp(probe, None, _scaling(1.05, 1.9))[0].severity == "error"
    assert build.no_openmp(probe, None, [])[0].severity == "warning"
    assert build.no_openmp(probe, None, [])[0].evidence["ATen parallel backend"] == "native thread pool"


def test_openmp_mkl_build_that_does_not_scale_while_the_reference_does():
    probe = probe_from_config(WHEEL_2130)
    reference = probe_from_config(WHEEL_2130, label="reference")
    found = build.no_openmp(probe, reference, _scaling(1.1, 1.9))
    assert found[0].severity == "warning"
    assert found[0].evidence["GEMM speed-up, 1 thread → all cores"] == {"value": 1.1, "unit": "x"}
    assert found[0].evidence["parallel efficiency per core"]["value"] == pytest.approx(0.55)
    # both sides poor: a busy machine, not the build
    assert build.no_openmp(probe, reference, _scaling(1.1, 1.1)) == []
    # the bound is 1.2x on 2 cores (60 % per core): just below and just above it
    assert build.no_openmp(probe, reference, _scaling(1.19, 1.9))[0].severity == "warning"
    assert build.no_openmp(probe, reference, _scaling(1.21, 1.9)) == []


def test_a_fast_single_thread_row_alone_is_no_scaling_finding():
    """H200 A/A (wheel against itself, 16 cores): the target's 1-thread GEMM read 143 vs
    98 GFLOP/s, so its efficiency came out 50 % against 73 % although both sides ran the
    all-cores GEMM at 1.15 TFLOP/s: without a slower all-cores row there is no finding."""
    probe = probe_from_config(WHEEL_2130)
    reference = probe_from_config(WHEEL_2130, label="reference")
    rows = []
    for threads, target_s, reference_s in ((1, 0.55e-3, 1e-3), ("all", 1e-3 / 1.9, 1e-3 / 1.9)):
        target, ref = bench_pair("thread_scaling", {"n": 512, "threads": threads},
                                 reference_s / target_s, reference_s=reference_s)
        rows.append(compare_pair([target], [ref]))
    assert build.no_openmp(probe, reference, rows) == []


# -- class 18: USE_MPI -----------------------------------------------------------------------

def test_use_mpi_differs_is_information():
    found = build.use_mpi_differs(probe_from_config(EASYBUILD),
                                  probe_from_config(WHEEL_291, label="reference"), [])
    assert [(f.rule_id, f.severity, f.title) for f in found] == [
        ("use-mpi-differs", "info", "USE_MPI=ON differs from upstream (OFF)")]
    assert build.use_mpi_differs(golden_probe("target"), golden_probe("reference"), []) == []
