"""Run-time rules (classes 4, 6, 7, 13, 17 and the no-reference peak rule)."""

import pytest

from eb_torchperf.diagnosis.rules import runtime
from eb_torchperf.diagnosis.facts import openmp_runtimes

from auditcases import (WHEEL_2130, comparisons, golden_probe, probe_from_config, real_probe,
                        target_only, timed_only, with_facts)

WHEEL_LIB = "/venv/lib/python3.11/site-packages/torch/lib/"


# -- class 4: several OpenMP runtimes -----------------------------------------------------

def test_libgomp_with_preloaded_llvm_libomp_is_an_error():
    found = runtime.multiple_openmp(real_probe("debian-libomp-preloaded"), None, [])
    assert [(f.rule_id, f.severity) for f in found] == [("multiple-openmp", "error")]
    assert found[0].evidence == {
        "GNU libgomp": "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0",
        "LLVM libomp": "/usr/lib/llvm-14/lib/libomp.so.5"}
    assert "KMP_DUPLICATE_LIB_OK" in found[0].advice


def test_two_copies_of_libgomp_warn():
    probe = with_facts(golden_probe("target"), mapped_libraries__libraries=[
        WHEEL_LIB + "libgomp-a34b3233.so.1", "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"])
    found = runtime.multiple_openmp(probe, None, [])
    assert found[0].severity == "warning"
    assert found[0].title.startswith("2 OpenMP runtime copies")


def test_one_runtime_seen_by_name_and_by_file_is_one_copy():
    # the wheel: threadpoolctl and /proc/self/maps both name torch/lib/libgomp.so.1
    assert runtime.multiple_openmp(golden_probe("reference"), None, []) == []
    probe = with_facts(golden_probe("target"), threadpools__pools=[
        {"user_api": "openmp", "filepath": "/usr/lib/x86_64-linux-gnu/libgomp.so.1",
         "num_threads": 1}])
    assert openmp_runtimes(probe) == {"GNU libgomp": ["/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"]}


# -- class 6: threads vs cores ---------------------------------------------------------------

def test_one_thread_on_two_cores_from_the_real_debian_probe():
    found = runtime.threads_vs_cores(golden_probe("target"), None, [])
    assert [(f.rule_id, f.severity, f.title) for f in found] == [
        ("threads-vs-cores", "warning", "1 intra-op thread on 2 usable cores")]
    assert found[0].evidence["usable cores"] == {"value": 2, "unit": "cores"}
    assert (found[0].evidence["CPU affinity"], found[0].evidence["cgroup CPU quota"]) == ("0-1", "none")
    assert found[0].evidence["threads per usable core"] == {"value": 0.5, "unit": "x"}


def _cores(threads, cores=4, quota=None):
    return with_facts(probe_from_config(WHEEL_2130), torch__intra_op_threads=threads,
                      cpu__allowed_cores=cores, cpu__affinity=list(range(cores)),
                      cpu__cgroup_cpu_quota=quota)


@pytest.mark.parametrize("threads, severity", [
    (2, "warning"),   # 0.5 per core: under the 0.6 bound
    (3, None),        # 0.75
    (4, None),        # 1.0: the upper limit is inclusive
    (5, "warning"),   # 1.25: oversubscribed
    (8, "warning"),   # 2.0: the error limit is inclusive
    (9, "error"),     # 2.25
])
def test_threads_per_core_bounds_on_four_cores(threads, severity):
    found = runtime.threads_vs_cores(_cores(threads), None, [])
    assert [f.severity for f in found] == ([severity] if severity else [])


def test_cgroup_quota_lowers_the_usable_cores():
    found = runtime.threads_vs_cores(_cores(4, cores=4, quota=1.5), None, [])
    assert found[0].title == "4 intra-op threads on 2 usable cores: oversubscribed"
    # a 1.5-CPU quota rounds up to 2 usable cores (diagnosis/facts.usable_cores)
    assert found[0].evidence["usable cores"] == {"value": 2, "unit": "cores"}
    assert found[0].evidence["CPU affinity"] == "0-3"
    assert found[0].evidence["cgroup CPU quota"] == {"value": 1.5, "unit": "CPUs"}


# -- class 7: pinned by inherited binding settings ---------------------------------------------

def test_omp_proc_bind_pins_the_real_wheel_process_to_one_core():
    probe = real_probe("wheel-omp-proc-bind")
    found = runtime.main_thread_pinned(probe, None, [])
    assert [(f.rule_id, f.severity) for f in found] == [("main-thread-pinned", "warning")]
    assert found[0].evidence["OMP_PROC_BIND"] == "true"
    assert found[0].evidence["affinity after import torch"] == [0]
    # the threads rule leaves this case to the pinning rule
    assert runtime.threads_vs_cores(probe, None, []) == []


def test_no_binding_variables_or_binding_disabled_is_not_pinning():
    assert runtime.main_thread_pinned(golden_probe("target"), None, []) == []
    disabled = with_facts(real_probe("wheel-omp-proc-bind"),
                          env__OMP_PROC_BIND="false")
    assert runtime.main_thread_pinned(disabled, None, []) == []


# -- class 13: denormals ------------------------------------------------------------------------

@pytest.mark.parametrize("denormal_s, found", [(2.5e-6, True), (2.0e-6, False), (1.9e-6, False)])
def test_denormal_slowdown_bound(denormal_s, found):
    rows = [timed_only("denormal", {"numel": 16384, "values": "normal"}, 1e-6),
            timed_only("denormal", {"numel": 16384, "values": "denormal"}, denormal_s)]
    result = runtime.denormal_slowdown(golden_probe("reference"), None, rows)
    assert bool(result) is found
    if found:
        assert result[0].severity == "info"
        assert result[0].evidence["denormal / normal time"]["value"] == pytest.approx(2.5)
        assert result[0].evidence["flush-to-zero supported"] is True


# -- without a reference: GEMM against the nominal peak ------------------------------------------

def test_mkl_gemm_far_below_peak_without_reference():
    wheel = golden_probe("reference")  # 2 threads on 2 Zen 4 cores: 166.2 GFLOP/s nominal
    low = runtime.gemm_below_peak(wheel, None, [target_only("matmul_fp32", {"n": 512}, 10.0)])
    assert [(f.rule_id, f.severity) for f in low] == [("gemm-below-peak", "error")]
    assert low[0].title == "GEMM reaches only 6.0 % of this machine's nominal peak"
    middle = runtime.gemm_below_peak(wheel, None, [target_only("matmul_fp32", {"n": 512}, 50.0)])
    assert middle[0].severity == "warning"
    assert runtime.gemm_below_peak(wheel, None, [target_only("matmul_fp32", {"n": 512}, 97.0)]) == []


def test_peak_rule_stays_out_when_a_reference_was_measured():
    assert runtime.gemm_below_peak(golden_probe("reference"), None,
                                   comparisons(("matmul_fp32", {"n": 512}, 0.1))) == []
