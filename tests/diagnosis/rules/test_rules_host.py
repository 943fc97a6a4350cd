"""Host and job rules (diagnosis/rules/host.py) over faked `host` facts."""

from eb_torchperf.diagnosis.rules import host
from auditcases import golden_probe, with_facts, with_section


def check(process, node=None, unit="", unknown=""):
    return {"label": "x", "process": process, "node": node, "unit": unit, "unknown": unknown,
            "source": "https://example.org"}


def probe(threads=None, **checks):
    base = with_section(golden_probe("target"), "host", checks)
    return with_facts(base, torch__intra_op_threads=threads) if threads else base


def ids(findings):
    return [(f.rule_id, f.severity, f.subject) for f in findings]


def test_cpus_narrow_uses_affinity_capped_by_quota():
    found = host.cpus_narrow(probe(cpus=check(8, 64), quota=check(4.0, 64)), None, [])
    assert ids(found) == [("host-cpus-narrow", "info", "host")]
    assert "4 of the node's 64 CPUs" in found[0].title
    assert host.cpus_narrow(probe(cpus=check(2, 2), quota=check("none", 2)), None, []) == []
    # the target alone on fewer CPUs is a difference of the two sides, not the host's
    wide = probe(cpus=check(64, 64))
    assert host.cpus_narrow(probe(cpus=check(8, 64)), wide, []) == []
    assert ids(host.cpus_narrow(probe(cpus=check(8, 64)), probe(cpus=check(8, 64)), []))
    hidden = probe(cpus=check(2, None, unknown="online unreadable"))
    assert host.cpus_narrow(hidden, None, []) == []


def test_smt_siblings_only_when_threads_exceed_cores():
    smt = check(4, 8, "cores")
    assert ids(host.smt_siblings(probe(8, smt=smt), None, [])) == [
        ("host-smt-siblings", "warning", "host")]
    assert host.smt_siblings(probe(4, smt=smt), None, []) == []
    assert host.smt_siblings(probe(8, smt=check(8, 8)), None, []) == []


def test_powersave_governor_on_any_allowed_cpu_and_old_results():
    mixed = probe(governor=check("performance, powersave", "acpi-cpufreq"))
    assert ids(host.governor_powersave(mixed, None, [])) == [
        ("governor-powersave", "warning", "host")]
    assert host.governor_powersave(probe(governor=check("performance")), None, []) == []
    old = with_facts(golden_probe("target"), cpu__governor="powersave")
    assert ids(host.governor_powersave(old, None, []))[0][0] == "governor-powersave"
    assert host.governor_powersave(with_facts(golden_probe("target"),
                                              cpu__governor="performance"), None, []) == []


def test_boost_off_warns_unknown_does_not():
    assert ids(host.boost_off(probe(boost=check("off", "intel_pstate/no_turbo=1")), None, []))\
        == [("host-boost-off", "warning", "host")]
    assert host.boost_off(probe(boost=check(None, unknown="neither")), None, []) == []


def test_numa_balancing_needs_several_nodes_and_a_gpu():
    on_two = check("on (1)", 2)
    gpus = check([700.0], [700.0], "W")
    assert ids(host.numa_balancing_on(probe(numa_balancing=on_two, gpu_power=gpus), None, []))\
        == [("host-numa-balancing", "warning", "host")]
    assert host.numa_balancing_on(probe(numa_balancing=check("on (1)", 1), gpu_power=gpus),
                                  None, []) == []
    assert host.numa_balancing_on(probe(numa_balancing=on_two), None, []) == []


def test_gpu_power_and_clocks_below_default():
    low = probe(gpu_power=check([500.0, 700.0], [700.0, 700.0], "W"),
                gpu_clocks=check([1980.0, None], [1980.0, 1980.0], "MHz"))
    found = host.gpu_below_default(low, None, [])
    assert ids(found) == [("host-gpu-below-default", "warning", "host")]
    assert found[0].evidence["GPUs below default"] == ["GPU 0: 500 of 700 W"]
    assert host.gpu_below_default(probe(gpu_power=check([699.5], [700.0], "W")), None, []) == []


def test_no_host_facts_no_finding():
    bare = golden_probe("target")
    assert [f for rule in host.RULES if rule is not host.governor_powersave
            for f in rule(bare, None, [])] == []
