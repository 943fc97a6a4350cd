"""The bundled upstream-wheel data agrees with the real texts it cites."""

import pathlib

import pytest

from eb_torchperf.records.buildconfig import parse_show
from eb_torchperf.diagnosis.wheelconfigs import load_wheel_configs, minor_version, wheel_config_for

CONFIG = pathlib.Path(__file__).resolve().parents[1] / "data" / "config"
#: data-file source key -> copy of that text in tests/data/config/
TEXTS = {"wheel-1.13.1-cu117": "wheel-1.13.1-cu117.txt",
         "wheel-2.9.1-cu128": "wheel-2.9.1-cu128-on-easybuild.txt",
         "wheel-2.11.0-cu130": "wheel-2.11.0-cu130-h200.txt",
         "wheel-2.13.0-cpu": "wheel-2.13.0-cpu.txt"}


@pytest.mark.parametrize("entry", load_wheel_configs(), ids=lambda e: e.source)
def test_each_entry_matches_its_source_text(entry):
    build = parse_show((CONFIG / TEXTS[entry.source]).read_text())
    assert minor_version(build.torch_version) == minor_version(entry.torch)
    assert (build.blas_info, build.lapack_info) == (entry.blas_info, entry.lapack_info)
    assert (build.use_mkl, build.use_mkldnn, build.use_openmp, build.use_mpi) == (
        entry.use_mkl, entry.use_mkldnn, entry.use_openmp, entry.use_mpi)
    assert build.mkl_version == entry.mkl_version
    assert build.onednn_version == entry.onednn_version
    assert (build.build_type, build.opt_level, build.march) == (
        entry.build_type, entry.opt_level, entry.march)
    assert "%s %s" % (build.compiler, build.compiler_version) == entry.compiler
    # every source text was printed on an AVX512 host (AMD EPYC Zen 4 or Sapphire Rapids)
    assert build.cpu_capability == entry.cpu_capability_on_avx512
    assert TEXTS[entry.source].split(".txt")[0] in entry.source_text or \
        "issues/931" in entry.source_text


def test_lookup_by_minor_version_and_nearest_known():
    assert wheel_config_for("1.13.0a0", "x86_64").source == "wheel-1.13.1-cu117"
    assert wheel_config_for("2.13.0+cpu", "x86_64").exact is True
    nearest = wheel_config_for("2.12.1", "x86_64")
    assert (nearest.torch, nearest.exact) == ("2.11", False)
    assert nearest.label == "upstream wheel torch 2.11 (linux-x86_64), nearest known version"
    assert wheel_config_for("2.13.0", "aarch64") is None
    assert wheel_config_for("not-a-version", "x86_64") is None
