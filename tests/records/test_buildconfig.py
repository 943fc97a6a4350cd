"""The show()/parallel_info() parser on the six real texts (tests/data/config/README.md)."""

import pytest

from eb_torchperf.records.buildconfig import (BuildConfig, parse_bool, parse_cxx_flags,
                                      parse_parallel_info, parse_show)

from testdata import read_config

# file -> expected fields (values read off the texts by hand)
EXPECTED = {
    "debian-12-python3-torch-1.13.1-source.txt": dict(
        torch_version="1.13.0", compiler="GCC", compiler_version="12.2", blas_info="generic",
        lapack_info="generic", use_mkl=False, mkl_version=None, use_mkldnn=True,
        onednn_version="2.6.3", openmp_version="201511", cpu_capability="AVX2",
        build_type="RelWithDebInfo", opt_level="2", march=None, debug_info=True,
        use_mpi=False, use_cuda=False, cuda_runtime=None, nvcc_archs=(), use_nccl=False),
    "easybuild-2.9.1-foss-2025a-CUDA-12.8.0-source.txt": dict(
        torch_version="2.9.1", compiler_version="14.2", blas_info="flexi", lapack_info="flexi",
        use_mkl=False, use_mkldnn=True, onednn_version="3.7.1", cpu_capability="AVX512",
        build_type="Release", opt_level="2", march="native", tree_vectorize=True,
        debug_info=False, use_mpi=True, use_cuda=True, cuda_runtime="12.8",
        nvcc_archs=("sm_89", "sm_90"), cudnn_runtime="91.0.1", cudnn_built_against_cuda="12.9",
        cudnn_build="9.10.1", magma_version="2.9.0", use_nccl=True, cxx_standard="201703"),
    "wheel-2.9.1-cu128-on-easybuild.txt": dict(
        torch_version="2.9.1", blas_info="mkl", use_mkl=True, mkl_version="2024.2",
        onednn_version="3.7.1", cpu_capability="AVX512", march=None, use_mpi=False,
        nvcc_archs=("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
        cudnn_built_with="90.8", cudnn_build="9.8.0", use_nccl=True),
    "wheel-2.11.0-cu130-h200.txt": dict(
        torch_version="2.11.0", blas_info="mkl", use_mkl=True, onednn_version="3.10.2",
        cuda_runtime="13.0", cudnn_runtime="91.9", cudnn_built_against_cuda="13.1",
        nvcc_archs=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"), use_mpi=False),
    "wheel-1.13.1-cu117.txt": dict(
        torch_version="1.13.1", compiler_version="9.3", blas_info="mkl", use_mkl=True,
        mkl_version="2020.0.0", onednn_version="2.6.0", cpu_capability="AVX2",
        use_cuda=True, cuda_version="11.7", cudnn_build="8.5.0", debug_info=False),
    "wheel-2.13.0-cpu.txt": dict(
        torch_version="2.13.0", blas_info="mkl", use_mkl=True, onednn_version="3.12.0",
        cpu_capability="AVX512", use_cuda=False, use_nccl=False, cxx_standard="202002",
        opt_level="2"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_show_real_texts(name):
    config = parse_show(read_config(name))
    for field, value in EXPECTED[name].items():
        assert getattr(config, field) == value, field


def test_unknown_lines_are_kept():
    text = read_config("wheel-2.13.0-cpu.txt").replace(
        "  - NNPACK is enabled", "  - NNPACK is enabled\n  - FancyNewBackend 7 is enabled")
    config = parse_show(text)
    assert config.extra_lines == ("FancyNewBackend 7 is enabled",)


def test_settings_keep_every_key():
    config = parse_show(read_config("wheel-2.13.0-cpu.txt"))
    assert config.settings["USE_XPU"] == "OFF"
    assert config.settings["COMMIT_SHA"] == "cf30153c4c131c8164ee7798e5022d810682e2cb"
    assert config.settings["CUDA_FLAGS"].startswith("-DLIBCUDACXX_ENABLE")


def test_settings_without_space_after_comma():
    # the 2.9.1 wheel prints "USE_MPI=OFF,USE_NCCL=1"
    config = parse_show(read_config("wheel-2.9.1-cu128-on-easybuild.txt"))
    assert config.settings["USE_MPI"] == "OFF" and config.settings["USE_NCCL"] == "1"


def test_round_trip_json():
    config = parse_show(read_config("easybuild-2.9.1-foss-2025a-CUDA-12.8.0-source.txt"))
    assert BuildConfig.from_json(config.to_json()) == config


def test_not_a_show_text():
    with pytest.raises(ValueError, match="not a torch.__config__.show"):
        parse_show("hello\nworld")


@pytest.mark.parametrize("flags,expected", [
    ("-O2 -ftree-vectorize -march=native -O3", {"opt_level": "3", "march": "native",
                                                "tree_vectorize": True, "debug_info": False}),
    ("-g -O0", {"opt_level": "0", "debug_info": True, "march": None}),
    ("-mcpu=neoverse-v2 -g1", {"mcpu": "neoverse-v2", "debug_info": True, "opt_level": None}),
    ("-Wno-array-bounds -gsplit-dwarf", {"debug_info": False}),
])
def test_parse_cxx_flags(flags, expected):
    facts = parse_cxx_flags(flags)
    for key, value in expected.items():
        assert facts[key] == value


@pytest.mark.parametrize("word,value", [("ON", True), ("1", True), ("OFF", False),
                                        ("0", False), ("maybe", None), (None, None)])
def test_parse_bool(word, value):
    assert parse_bool(word) is value


def test_parallel_info_debian():
    info = parse_parallel_info(read_config("debian-12-python3-torch-1.13.1-source.parallel_info.txt"))
    assert info["intra_op_threads"] == 1 and info["hardware_concurrency"] == 2
    assert info["backend"] == "OpenMP" and "mkl_max_threads" not in info
    assert info["env"] == {"OMP_NUM_THREADS": None, "MKL_NUM_THREADS": None}


def test_parallel_info_h200_wheel():
    info = parse_parallel_info(read_config("wheel-2.11.0-cu130-h200.parallel_info.txt"))
    assert info["intra_op_threads"] == 16 and info["mkl_max_threads"] == 16
    assert info["interop_threads"] == 16
