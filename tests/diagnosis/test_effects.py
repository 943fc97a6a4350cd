"""Documented effects (diagnosis/effects.py, data/effects.json) in the differences table."""

import pytest

from eb_torchperf.diagnosis import effects
from eb_torchperf.diagnosis.differences import Difference, differences
from eb_torchperf.present.report.differences_view import differences_rows
from eb_torchperf.probe import registry
from auditcases import golden_probe, with_section

#: The variables issue 29 names; each needs a documented effect.
NAMED = ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "CUDA_MODULE_LOADING",
         "CUDA_LAUNCH_BLOCKING", "PYTORCH_NO_CUDA_MEMORY_CACHING", "OMP_NUM_THREADS",
         "MKL_NUM_THREADS", "KMP_AFFINITY", "OMP_PROC_BIND", "ATEN_CPU_CAPABILITY",
         "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE", "MKL_CBWR",
         "MKL_ENABLE_INSTRUCTIONS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "LD_PRELOAD",
         "MALLOC_ARENA_MAX")


def test_every_entry_has_a_source_and_registry_families():
    known = {"%s/%s" % (b.device, b.family) for b in registry.load_suites().values()}
    entries = effects.load_effects()
    assert len({e.name for e in entries}) == len(entries)
    for entry in entries:
        assert entry.source.startswith("https://"), entry.name
        assert entry.effect and set(entry.families) <= known, entry.name


@pytest.mark.parametrize("name", NAMED)
def test_named_variables_are_documented(name):
    assert effects.documented_effect(name) is not None


def test_prefix_entries_match_and_unknown_names_do_not():
    assert effects.documented_effect("MALLOC_ARENA_MAX").name == "MALLOC_*"
    assert effects.documented_effect("MALLOC") is None
    assert effects.documented_effect("SOME_OTHER_VARIABLE") is None


def test_difference_carries_the_documented_effect_into_the_table():
    wheel = golden_probe("reference")
    env = dict(wheel.facts["env"], NVIDIA_TF32_OVERRIDE="0", EBTP_UNKNOWN_KNOB="1")
    rows = {r["key"]: r for r in differences_rows(
        differences(with_section(wheel, "env", env), wheel))}
    assert rows["NVIDIA_TF32_OVERRIDE"]["effect"].startswith("=0 disables TF32")


def test_effect_column_names_a_rule_only_where_it_fired():
    diff = Difference("ONEDNN_MAX_CPU_ISA", "environment", "SSE41", None,
                      known_effect=("onednn-off",), effect="caps oneDNN's instruction set")
    assert differences_rows([diff], ["onednn-off"])[0]["effect"] == "explained by onednn-off"
    assert differences_rows([diff], [])[0]["effect"] == "caps oneDNN's instruction set"
    bare = Difference("compiler flags", "build", "a", "b", known_effect=("debug-build",))
    assert differences_rows([bare], [])[0]["effect"] == "no finding from debug-build"
    unknown = Difference("X", "environment", "1", None)
    assert differences_rows([unknown], [])[0]["effect"] == "unknown effect"


def test_other_libraries_are_counted_not_listed():
    wheel = golden_probe("reference")
    shared = {"libzstd": {"version": "1.5"}}
    extra = {"libextra%d" % i: {"version": "1"} for i in range(40)}
    target = with_section(wheel, "libraries", {"libraries": dict(shared, **extra)})
    reference = with_section(wheel, "libraries", {"libraries": {"libzstd": {"version": "1.4"}}})
    other = [d for d in differences(target, reference) if d.key == "other shared libraries"]
    assert other[0].target == ("40 only here, 1 in another version "
                               "(e.g. libzstd.so.1.5, libextra0.so.1, libextra1.so.1)")
    assert other[0].reference == "1 in another version (e.g. libzstd.so.1.4)"
