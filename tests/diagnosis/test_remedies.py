"""Which run-time remedies apply, from real probe facts and real config texts."""

import os

import pytest

from eb_torchperf.diagnosis.families import GEMM_BENCHES
from eb_torchperf.explain_stage.remedies import (REMEDIES, BlasHost, applicable,
                                   discover_host)
from eb_torchperf.diagnosis.facts import (best_capability, current_capability, openmp_libraries,
                                        torch_blas_pools, usable_cores)

from explain_helpers import (DEBIAN_FACTS, EASYBUILD_CONFIG, WHEEL_FACTS, facts_for_config,
                             golden_facts, probe_from)

DEBIAN_LIBDIR = "/usr/lib/x86_64-linux-gnu"


def ids(probe):
    return [r.id for r in applicable(probe)]


def remedy(remedy_id):
    return next(r for r in REMEDIES if r.id == remedy_id)


def easybuild_flexiblas(threads=16, cores=16, openblas_threading="pthreads"):
    """The EasyBuild 2.9.1 build (BLAS_INFO=flexi) with FlexiBLAS/OpenBLAS loaded."""
    facts = facts_for_config(EASYBUILD_CONFIG, threads, cores)
    eb = "/apps/software/FlexiBLAS/3.4.5-GCC-14.2.0/lib"
    facts["mapped_libraries"]["libraries"] = [
        eb + "/libflexiblas.so.3.4", eb + "/flexiblas/libflexiblas_openblas.so",
        "/apps/software/OpenBLAS/0.3.29-GCC-14.2.0/lib/libopenblas.so.0",
        "/apps/software/GCCcore/14.2.0/lib64/libgomp.so.1.0.0"]
    facts["threadpools"]["pools"] = [
        {"user_api": "blas", "internal_api": "flexiblas", "num_threads": cores,
         "prefix": "libflexiblas", "filepath": eb + "/libflexiblas.so.3.4",
         "available_backends": ["NETLIB", "OPENBLAS", "BLIS", "IMKL"],
         "loaded_backends": ["OPENBLAS"], "current_backend": "OPENBLAS"},
        {"user_api": "blas", "internal_api": "openblas", "num_threads": cores,
         "prefix": "libopenblas", "threading_layer": openblas_threading,
         "filepath": "/apps/software/OpenBLAS/0.3.29-GCC-14.2.0/lib/libopenblas.so.0"},
        {"user_api": "openmp", "internal_api": "openmp", "num_threads": cores,
         "prefix": "libgomp", "filepath": "/apps/software/GCCcore/14.2.0/lib64/libgomp.so.1.0.0"}]
    return facts


def test_debian_needs_blas_threads_and_capability():
    debian = probe_from(golden_facts(DEBIAN_FACTS))
    assert ids(debian) == ["blas-provider-path", "threads-to-cores", "cpu-capability-raise"]
    assert remedy("threads-to-cores").variants(debian, BlasHost())[0].env == {"OMP_NUM_THREADS": "2"}
    raise_ = remedy("cpu-capability-raise").variants(debian, BlasHost())[0]
    assert raise_.env == {"ATEN_CPU_CAPABILITY": "avx512"}
    assert raise_.expect == {"capability": "AVX512"}


def test_wheel_needs_nothing_despite_numpys_openblas():
    wheel = probe_from(golden_facts(WHEEL_FACTS))
    assert [p["prefix"] for p in wheel.facts["threadpools"]["pools"]] == ["libscipy_openblas",
                                                                          "libgomp"]
    assert torch_blas_pools(wheel) == []
    assert ids(wheel) == []


def test_runtime_facts_of_real_probes():
    debian, wheel = probe_from(golden_facts(DEBIAN_FACTS)), probe_from(golden_facts(WHEEL_FACTS))
    assert current_capability(debian) == "AVX2"   # from show(): torch 1.13 has no API for it
    assert current_capability(wheel) == "AVX512"  # torch.backends.cpu.get_cpu_capability()
    assert best_capability(debian) == "AVX512"
    assert usable_cores(debian) == 2
    assert openmp_libraries(debian) == ["/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"]


# a fractional quota rounds up (1.5 CPUs -> 2): the finding threads-vs-cores and the
# remedy trials that confirm it read this one function (diagnosis/facts.usable_cores)
@pytest.mark.parametrize("allowed, quota, expected", [(4, None, 4), (4, 1.5, 2), (4, 8.0, 4),
                                                      (4, 0.5, 1), (1, 1.5, 1)])
def test_usable_cores_caps_by_cgroup_quota(allowed, quota, expected):
    facts = facts_for_config(EASYBUILD_CONFIG, 1, allowed)
    facts["cpu"]["cgroup_cpu_quota"] = quota
    assert usable_cores(probe_from(facts)) == expected


@pytest.mark.parametrize("threads, cores, expected", [
    (1, 2, ["threads-to-cores"]), (2, 2, []), (4, 2, ["threads-cap-cores"])])
def test_thread_remedies_at_the_boundary(threads, cores, expected):
    facts = facts_for_config("wheel-2.13.0-cpu.txt", threads, cores)
    assert ids(probe_from(facts)) == expected


def test_flexiblas_backends_from_threadpoolctl():
    probe = probe_from(easybuild_flexiblas(openblas_threading="openmp"))
    assert ids(probe) == ["blas-flexiblas-backend"]
    variants = remedy("blas-flexiblas-backend").variants(probe, BlasHost())
    assert [v.label for v in variants] == ["FLEXIBLAS=BLIS", "FLEXIBLAS=IMKL"]
    assert variants[1].env == {"FLEXIBLAS": "IMKL"}
    assert variants[1].expect == {"flexiblas_backend": "IMKL"}


def test_flexiblas_backends_from_the_install_when_threadpoolctl_cannot_list(tmp_path):
    facts = easybuild_flexiblas()
    lib = tmp_path / "lib"
    (lib / "flexiblas").mkdir(parents=True)
    for name in ("libflexiblas_openblas.so", "libflexiblas_blis.so", "libflexiblas_netlib.so"):
        (lib / "flexiblas" / name).write_text("")
    facts["mapped_libraries"]["libraries"][0] = str(lib / "libflexiblas.so.3.4")
    del facts["threadpools"]["pools"][0]["available_backends"]
    facts["threadpools"]["pools"][0]["current_backend"] = str(lib / "flexiblas" /
                                                              "libflexiblas_openblas.so")
    probe = probe_from(facts)
    host = discover_host(probe)
    assert host.flexiblas_backends == tuple(str(lib / "flexiblas" / n) for n in (
        "libflexiblas_blis.so", "libflexiblas_netlib.so", "libflexiblas_openblas.so"))
    variants = remedy("blas-flexiblas-backend").variants(probe, host)
    assert [v.env["FLEXIBLAS"] for v in variants] == [str(lib / "flexiblas" /
                                                          "libflexiblas_blis.so"),
                                                      str(lib / "flexiblas" /
                                                          "libflexiblas_netlib.so")]


def test_pthread_blas_inside_openmp_threads_is_oversubscription():
    facts = easybuild_flexiblas(threads=16, cores=16)
    facts["threadpools"]["pools"][0]["available_backends"] = ["OPENBLAS"]
    probe = probe_from(facts)
    assert ids(probe) == ["blas-flexiblas-backend", "blas-threads-1", "omp-wait-passive"]
    threads_1 = remedy("blas-threads-1").variants(probe, BlasHost())
    assert [(v.label, v.env) for v in threads_1] == [("OPENBLAS_NUM_THREADS=1",
                                                      {"OPENBLAS_NUM_THREADS": "1"})]
    assert remedy("omp-wait-passive").variants(probe, BlasHost())[0].env == {
        "OMP_WAIT_POLICY": "PASSIVE"}
    single = easybuild_flexiblas(threads=1, cores=16)
    assert "blas-threads-1" not in ids(probe_from(single))


def test_forced_low_capability_is_unset():
    facts = facts_for_config("wheel-2.13.0-cpu.txt", 2, 2)
    facts["env"]["ATEN_CPU_CAPABILITY"] = "avx2"
    probe = probe_from(facts)
    assert ids(probe) == ["cpu-capability-unforce"]
    variant = remedy("cpu-capability-unforce").variants(probe, BlasHost())[0]
    assert variant.env == {"ATEN_CPU_CAPABILITY": None}
    assert variant.expect == {"capability_above": "AVX2"}
    facts["env"]["ATEN_CPU_CAPABILITY"] = "avx512"
    assert ids(probe_from(facts)) == []


def test_preloaded_second_openmp_runtime_is_dropped():
    facts = facts_for_config("wheel-2.13.0-cpu.txt", 2, 2)
    facts["env"]["LD_PRELOAD"] = "/usr/lib/libjemalloc.so.2:/opt/intel/lib/libiomp5.so"
    facts["mapped_libraries"]["libraries"] = ["/opt/intel/lib/libiomp5.so",
                                              "/opt/torch/lib/libgomp.so.1"]
    probe = probe_from(facts)
    assert ids(probe) == ["drop-preloaded-openmp"]
    variant = remedy("drop-preloaded-openmp").variants(probe, BlasHost())[0]
    assert variant.env == {"LD_PRELOAD": "/usr/lib/libjemalloc.so.2"}
    assert variant.label == "LD_PRELOAD without libiomp5.so"
    facts["env"]["LD_PRELOAD"] = "/opt/intel/lib/libiomp5.so"
    assert remedy("drop-preloaded-openmp").variants(probe_from(facts), BlasHost())[0].env == {
        "LD_PRELOAD": None}


def test_blas_remedies_are_x86_only():
    facts = golden_facts(DEBIAN_FACTS)
    facts["cpu"]["machine"] = "aarch64"
    assert ids(probe_from(facts)) == ["threads-to-cores"]


def test_provider_folders_next_to_the_loaded_libblas(tmp_path):
    for provider in ("blas", "openblas-pthread", "blis-openmp"):
        (tmp_path / provider).mkdir()
        (tmp_path / provider / "libblas.so.3").write_text("")
    facts = golden_facts(DEBIAN_FACTS)
    facts["mapped_libraries"]["libraries"][0] = str(tmp_path / "blas" / "libblas.so.3.11.0")
    facts["env"]["LD_LIBRARY_PATH"] = "/opt/site/lib"
    probe = probe_from(facts)
    host = discover_host(probe)
    assert host.providers == tuple(str(tmp_path / p) for p in ("blas", "blis-openmp",
                                                               "openblas-pthread"))
    variants = remedy("blas-provider-path").variants(probe, host)
    assert [v.label for v in variants] == ["libblas.so.3 from blis-openmp/ (LD_LIBRARY_PATH)",
                                           "libblas.so.3 from openblas-pthread/ (LD_LIBRARY_PATH)"]
    assert variants[1].env == {"LD_LIBRARY_PATH": str(tmp_path / "openblas-pthread") +
                               os.pathsep + "/opt/site/lib"}
    assert variants[1].expect == {"blas_dir": str(tmp_path / "openblas-pthread")}
    assert remedy("blas-provider-path").benches == GEMM_BENCHES


def test_debian_providers_on_this_machine():
    if not os.path.exists(DEBIAN_LIBDIR + "/openblas-pthread/libblas.so.3"):
        pytest.skip("needs Debian's libopenblas0-pthread (apt-get install libopenblas0-pthread)")
    probe = probe_from(golden_facts(DEBIAN_FACTS))
    host = discover_host(probe)
    assert DEBIAN_LIBDIR + "/openblas-pthread" in host.providers
    labels = [v.label for v in remedy("blas-provider-path").variants(probe, host)]
    assert "libblas.so.3 from openblas-pthread/ (LD_LIBRARY_PATH)" in labels
    assert not any(label.startswith("libblas.so.3 from blas/") for label in labels)
