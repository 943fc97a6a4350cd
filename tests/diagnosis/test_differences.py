"""differences: every fact of the two sides compared, grouped, marked known/unknown."""

from eb_torchperf.diagnosis.differences import AFFINITY_VAR, cpulist, differences, known_effect

from auditcases import golden_probe, with_facts, with_section


def _by_key(diffs):
    return {d.key: d for d in diffs}


def test_same_probe_has_no_differences():
    wheel = golden_probe("reference")
    assert differences(wheel, with_facts(wheel, python__executable="/other/bin/python3",
                                         python__prefix="/other", torch__file="/other/t.py")) == []


def test_env_variable_on_target_only_is_one_changeable_unknown_difference():
    wheel = golden_probe("reference")
    env = dict(wheel.facts["env"], DNNL_MAX_CPU_ISA="SSE41")
    diffs = differences(with_section(wheel, 'env', env), wheel)
    assert [(d.key, d.group, d.target, d.reference) for d in diffs] == [
        ("DNNL_MAX_CPU_ISA", "environment", "SSE41", None)]
    d = diffs[0]
    assert (d.known_effect, d.changeable, d.how) == ((), True, "unset DNNL_MAX_CPU_ISA")
    assert (d.trial_env, d.expect) == ({"DNNL_MAX_CPU_ISA": None},
                                       {"env": {"DNNL_MAX_CPU_ISA": None}})


def test_known_variable_names_its_rule_and_path_variables_are_not_tried():
    wheel = golden_probe("reference")
    env = dict(wheel.facts["env"], ATEN_CPU_CAPABILITY="default", PYTHONPATH="/site")
    diffs = _by_key(differences(with_section(wheel, 'env', env), wheel))
    assert diffs["ATEN_CPU_CAPABILITY"].known_effect == ("cpu-capability-low",)
    assert diffs["PYTHONPATH"].changeable is False and diffs["PYTHONPATH"].trial_env == {}


def test_narrowed_affinity_is_one_difference_with_the_reference_mask_as_trial():
    wheel = golden_probe("reference")
    narrow = with_facts(wheel, cpu__affinity=[0], cpu__allowed_cores=1, torch__intra_op_threads=1)
    diffs = differences(narrow, wheel)
    assert [d.key for d in diffs] == ["CPU affinity"]  # the thread count follows from it
    assert diffs[0].target == "0 (1 core)" and diffs[0].reference == "0-1 (2 cores)"
    assert diffs[0].trial_env == {AFFINITY_VAR: "0-1"} and diffs[0].expect == {"affinity": 2}


def test_debian_vs_wheel_shows_blas_capability_threads_once_each():
    diffs = differences(golden_probe("target"), golden_probe("reference"))
    keys = [d.key for d in diffs]
    assert len(keys) == len(set(keys)) and len(keys) <= 8
    for key in ("BLAS", "CPU capability", "intra-op threads", "torch version"):
        assert keys.count(key) == 1
    blas = _by_key(diffs)["BLAS"]
    assert "BLAS_INFO=generic" in blas.target and "BLAS_INFO=mkl" in blas.reference
    assert blas.known_effect == ("blas-not-mkl", "mkl-missing") and not blas.changeable
    assert not any("python" in k.lower() for k in keys)


def test_cpulist_and_known_effect():
    assert cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert cpulist(None) is None
    assert known_effect("NCCL_P2P_DISABLE") == ("nccl-transport-off",)
    assert known_effect("SOMETHING_NEW") == ()


def test_allocator_setting_differs_when_one_side_tunes_malloc():
    wheel = golden_probe("reference")
    on = with_section(wheel, "allocator", {"applied": True, "reason": "heap reuse: M_MMAP_MAX=0"})
    off = with_section(wheel, "allocator", {
        "applied": False, "reason": "the environment tunes glibc malloc (MALLOC_ARENA_MAX)"})
    diffs = _by_key(differences(off, on))
    d = diffs["benchmark workers' malloc setting"]
    assert (d.group, d.target, d.reference) == (
        "system", "the environment tunes glibc malloc (MALLOC_ARENA_MAX)",
        "heap reuse: M_MMAP_MAX=0")
    assert "benchmark workers' malloc setting" not in _by_key(differences(on, on))
    assert differences(wheel, wheel) == []  # older results without the section
