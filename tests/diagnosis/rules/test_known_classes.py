"""New known classes: THP off, compile unusable, deterministic, GPU NUMA, NCCL off."""

from eb_torchperf.diagnosis.rules import known_classes as kc

from auditcases import comparisons, golden_probe, with_facts, with_section

WHEEL = golden_probe("reference")


def _env(**env):
    return with_section(WHEEL, "env", dict(WHEEL.facts["env"], **env))


def test_thp_never_graded_by_the_training_row():
    target = with_facts(WHEEL, system__thp_enabled="never")
    ref = with_facts(WHEEL, system__thp_enabled="madvise")
    slow = comparisons(("bert_layer_train", {"batch": 1, "seq": 64, "hidden": 768}, 0.8))
    [f] = kc.thp_off(target, target, slow)
    assert (f.rule_id, f.severity, f.source) == ("thp-off", "warning", kc.SOURCE_THP)
    assert kc.thp_off(target, target, [])[0].severity == "info"
    assert kc.thp_off(target, ref, [])[0].severity == "warning"
    assert kc.thp_off(ref, ref, slow) == []


def test_compile_prerequisites():
    base = {"cxx": "/usr/bin/g++", "python_h": True, "cuda_build": False, "triton_found": False,
            "triton_version": None, "triton_required": None, "smoke": None}
    assert kc.compile_unusable(with_section(WHEEL, "compile", base), None, []) == []
    [f] = kc.compile_unusable(with_section(WHEEL, "compile", dict(base, cxx=None)), None, [])
    assert f.severity == "warning" and "C++ compiler" in f.evidence
    failed = dict(base, smoke={"ok": False, "seconds": 3.0, "error": "CalledProcessError: x"})
    assert kc.compile_unusable(with_section(WHEEL, "compile", failed), None, [])[0].severity == "error"


def test_small_cublas_workspace_and_nccl_disabled():
    [f] = kc.deterministic(_env(CUBLAS_WORKSPACE_CONFIG=":16:8"), None, [])
    assert (f.rule_id, f.severity) == ("deterministic-algorithms", "warning")
    assert kc.deterministic(WHEEL, None, []) == []
    [n] = kc.nccl_transport_off(_env(NCCL_P2P_DISABLE="1"), None, [])
    assert n.rule_id == "nccl-transport-off" and n.evidence["NCCL_P2P_DISABLE"] == "1"
    assert kc.nccl_transport_off(_env(NCCL_P2P_DISABLE="0"), None, []) == []


def test_gpu_on_a_remote_numa_node():
    remote = with_section(WHEEL, "system", {"numa_nodes": {"0": [0], "1": [1]},
                                             "process_nodes": ["0"],
                                             "gpu_numa": [{"index": 0, "numa_node": 1}]})
    [f] = kc.gpu_numa_remote(remote, None, [])
    assert f.rule_id == "gpu-numa-remote" and f.evidence["GPU NUMA nodes"] == [1]
    local = with_section(WHEEL, "system", dict(remote.facts["system"], process_nodes=["0", "1"]))
    assert kc.gpu_numa_remote(local, None, []) == []
