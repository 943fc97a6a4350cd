"""Host and job checks (probe/hostjob.py) over a faked /proc, /sys and nvidia-smi."""

from pathlib import Path

from eb_torchperf.probe import hostjob
from eb_torchperf.probe.hostjob import Reader

CPU = "sys/devices/system/cpu"


def write(root: Path, files: dict) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root


def reader(root, affinity=(0, 1, 2, 3), smi=None):
    """A Reader on `root`; `smi` is nvidia-smi's stdout (None: no nvidia-smi)."""
    return Reader(str(root), run=lambda argv, timeout_s: smi,
                  which=lambda name: "/usr/bin/nvidia-smi" if smi is not None else None,
                  affinity=affinity)


def test_cpus_allowed_against_online(tmp_path):
    root = write(tmp_path, {CPU + "/online": "0-7"})
    check = hostjob.check_cpus(reader(root, affinity=(2, 3)))
    assert (check["process"], check["node"], check["unknown"]) == (2, 8, "")
    hidden = hostjob.check_cpus(reader(tmp_path / "empty", affinity=(0, 1)))
    assert hidden["process"] == 2 and "online unreadable" in hidden["unknown"]


def test_quota_takes_the_tightest_cgroup_v2_level(tmp_path):
    root = write(tmp_path, {"proc/self/cgroup": "0::/job_42/step_0",
                            "sys/fs/cgroup/job_42/step_0/cpu.max": "max 100000",
                            "sys/fs/cgroup/job_42/cpu.max": "150000 100000",
                            "sys/fs/cgroup/cpu.max": "max 100000", CPU + "/online": "0-3"})
    check = hostjob.check_quota(reader(root))
    assert (check["process"], check["node"], check["unknown"]) == (1.5, 4, "")


def test_quota_cgroup_v1_unlimited_and_absent(tmp_path):
    root = write(tmp_path, {"proc/self/cgroup": "3:cpu,cpuacct:/\n1:memory:/x",
                            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1",
                            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000"})
    assert hostjob.check_quota(reader(root))["process"] == "none"
    absent = hostjob.check_quota(reader(tmp_path / "empty"))
    assert absent["process"] is None and "no cgroup CPU controller" in absent["unknown"]


def test_smt_siblings_counted_inside_the_affinity(tmp_path):
    root = write(tmp_path, {CPU + "/cpu%d/topology/thread_siblings_list" % cpu: siblings
                            for cpu, siblings in ((0, "0,4"), (1, "1,5"), (4, "0,4"),
                                                  (5, "1,5"))})
    check = hostjob.check_smt(reader(root, affinity=(0, 1, 4, 5)))
    assert (check["process"], check["node"]) == (2, 4)
    # siblings outside the affinity do not count: cpu0 and cpu1 are two cores
    assert hostjob.check_smt(reader(root, affinity=(0, 1)))["process"] == 2
    assert "cpu4 topology unreadable" in hostjob.check_smt(
        reader(tmp_path / "empty", affinity=(4,)))["unknown"]


def test_governor_lists_every_allowed_cpu_and_driver(tmp_path):
    root = write(tmp_path, {CPU + "/cpu0/cpufreq/scaling_governor": "performance",
                            CPU + "/cpu1/cpufreq/scaling_governor": "powersave",
                            CPU + "/cpu0/cpufreq/scaling_driver": "acpi-cpufreq"})
    check = hostjob.check_governor(reader(root, affinity=(0, 1)))
    assert (check["process"], check["node"]) == ("performance, powersave", "acpi-cpufreq")
    assert "no cpufreq" in hostjob.check_governor(reader(tmp_path / "e"))["unknown"]


def test_boost_from_intel_pstate_or_cpufreq(tmp_path):
    pstate = write(tmp_path / "a", {CPU + "/intel_pstate/no_turbo": "1"})
    assert hostjob.check_boost(reader(pstate))["process"] == "off"
    acpi = write(tmp_path / "b", {CPU + "/cpufreq/boost": "1"})
    assert hostjob.check_boost(reader(acpi))["process"] == "on"
    assert "neither" in hostjob.check_boost(reader(tmp_path / "c"))["unknown"]


def test_numa_balancing_and_thp_with_node_count(tmp_path):
    root = write(tmp_path, {"proc/sys/kernel/numa_balancing": "1",
                            "sys/devices/system/node/node0/cpulist": "0-3",
                            "sys/devices/system/node/node1/cpulist": "4-7",
                            "sys/kernel/mm/transparent_hugepage/enabled":
                                "always [madvise] never"})
    numa = hostjob.check_numa_balancing(reader(root))
    assert (numa["process"], numa["node"]) == ("on (1)", 2)
    assert hostjob.check_thp(reader(root))["process"] == "madvise"
    assert "unreadable" in hostjob.check_numa_balancing(reader(tmp_path / "e"))["unknown"]


SMI = ("0, 00000000:19:00.0, 500.00, 700.00, 1755, 1980\n"
       "1, 00000000:3B:00.0, [N/A], 700.00, [Not Supported], 1980\n")


def test_gpu_checks_parse_nvidia_smi_and_pci_numa(tmp_path):
    root = write(tmp_path, {"sys/bus/pci/devices/0000:19:00.0/numa_node": "0",
                            "sys/bus/pci/devices/0000:3b:00.0/numa_node": "1"})
    checks = hostjob.gpu_checks(reader(root, smi=SMI))
    assert checks["gpu_power"]["process"] == [500.0, None]
    assert checks["gpu_power"]["node"] == [700.0, 700.0]
    assert checks["gpu_clocks"]["process"] == [1755.0, None]
    assert checks["gpu_numa"]["process"] == [0, 1]


def test_gpu_checks_unknown_without_nvidia_smi_or_on_failure(tmp_path):
    absent = hostjob.gpu_checks(reader(tmp_path, smi=None))
    assert {c["unknown"] for c in absent.values()} == {"no nvidia-smi"}
    failing = Reader(str(tmp_path), run=lambda argv, timeout_s: None,
                     which=lambda name: "/bin/nvidia-smi", affinity=(0,))
    assert hostjob.gpu_checks(failing)["gpu_power"]["unknown"] == "nvidia-smi failed or timed out"


def test_nvidia_smi_is_only_queried():
    seen = []
    fake = Reader("/nonexistent", run=lambda argv, timeout_s: seen.append(argv) or "",
                  which=lambda name: "/bin/nvidia-smi", affinity=(0,))
    hostjob.gpu_checks(fake)
    assert len(seen) == 1 and seen[0][1].startswith("--query-gpu=")
    assert not any(flag in arg for arg in seen[0] for flag in ("-pl", "-ac", "-rac", "-pm"))


def test_collect_host_has_every_check_each_with_a_source(tmp_path):
    facts = hostjob.collect_host(reader=reader(tmp_path))
    assert list(facts) == [name for name, _ in hostjob.CHECKS] + ["gpu_power", "gpu_clocks",
                                                                  "gpu_numa"]
    assert all(c["source"].startswith("https://") for c in facts.values())
    assert all(c["unknown"] or c["process"] is not None for c in facts.values())
