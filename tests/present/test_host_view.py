"""The "Host and job" section and the verdict's host clause (present/host_view.py)."""

from eb_torchperf.present import host_view
from eb_torchperf.records.findings import Finding
from auditcases import golden_probe, with_section

HOST = {
    "cpus": {"label": "CPUs allowed", "process": 1, "node": 2, "unit": "CPUs", "unknown": "",
             "source": "https://man7.org/x"},
    "governor": {"label": "CPU frequency governor", "process": None, "node": None, "unit": "",
                 "unknown": "no cpufreq in /sys", "source": "https://docs.kernel.org/x"},
    "gpu_power": {"label": "GPU power limit", "process": [500.0, None], "node": [700.0, 700.0],
                  "unit": "W", "unknown": "", "source": "https://docs.nvidia.com/x"},
}


def finding(rule, severity, subject):
    return Finding(rule, severity, "title of " + rule, {}, "advice", "https://x", subject)


def test_rows_give_values_with_units_and_unknown_reasons():
    rows = host_view.host_rows(with_section(golden_probe("target"), "host", HOST))
    assert [(r["check"], r["job"], r["node"], r["note"]) for r in rows] == [
        ("CPUs allowed", "1 CPUs", "2 CPUs", ""),
        ("CPU frequency governor", "unknown", "—", "unknown: no cpufreq in /sys"),
        ("GPU power limit", "GPU 0: 500 W; GPU 1: —", "GPU 0: 700 W; GPU 1: 700 W", "")]
    assert host_view.host_rows(golden_probe("target")) == []


def test_isolation_notes_name_malloc_and_user_site():
    probe = with_section(with_section(golden_probe("target"), "allocator",
                                      {"applied": True, "reason": "heap reuse: M_MMAP_MAX=0"}),
                         "isolation", {"user_site": "/home/u/.local/lib/site-packages"})
    notes = host_view.isolation_notes(probe)
    assert any("M_MMAP_MAX=0" in n and "EBTP_KEEP_MALLOC=1" in n for n in notes)
    assert any("/home/u/.local/lib/site-packages" in n for n in notes)
    kept = with_section(golden_probe("target"), "allocator", {"applied": False, "reason": "x"})
    assert not any("malloc" in n for n in host_view.isolation_notes(kept))


def test_verdict_says_on_this_host_only_with_host_findings():
    host = [finding("host-boost-off", "warning", "host")]
    assert host_view.host_status("OK", []) == ("OK", "")
    status, clause = host_view.host_status("WARNING", host)
    assert status == "WARNING ON THIS HOST"
    assert clause == "the host limits both sides: title of host-boost-off"
    assert host_view.host_status("OK", [finding("host-cpus-narrow", "info", "host")])[0] \
        == "OK ON THIS HOST"
    mixed = host + [finding("blas-not-mkl", "error", "/usr/bin/python3")]
    assert host_view.host_status("ERROR", mixed)[0] == "ERROR"
    assert host_view.only_host(host) and not host_view.only_host(mixed)


def test_terminal_table_has_a_row_per_check():
    rows = host_view.host_rows(with_section(golden_probe("target"), "host", HOST))
    table = host_view.host_table(rows, ["a note"])
    assert table.row_count == 3 and table.caption == "a note"
    assert host_view.host_table([], []) is None
