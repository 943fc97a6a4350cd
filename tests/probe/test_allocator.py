"""The worker's glibc malloc settings (issue 16): applied alike on both sides, left alone
where the environment tunes malloc itself, and the page faults they remove."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from eb_torchperf.probe import allocator


class FakeLibc:
    def __init__(self, answer=1):
        self.calls, self.answer = [], answer

    def mallopt(self, param, value):
        self.calls.append((param, value))
        return self.answer


def test_configure_sets_no_mmap_and_no_trim():
    libc = FakeLibc()
    state = allocator.configure({}, libc)
    assert libc.calls == [(allocator.M_MMAP_MAX, 0),
                          (allocator.M_TRIM_THRESHOLD, 2 ** 31 - 1)]
    assert state["applied"] is True and "M_MMAP_MAX=0" in state["reason"]
    assert allocator.collect() == state


@pytest.mark.parametrize("environ, named", [
    ({"MALLOC_ARENA_MAX": "2"}, "MALLOC_ARENA_MAX"),
    ({"MALLOC_TRIM_THRESHOLD_": "0"}, "MALLOC_TRIM_THRESHOLD_"),
    ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}, "GLIBC_TUNABLES"),
])
def test_a_site_setting_is_left_alone(environ, named):
    libc = FakeLibc()
    state = allocator.configure(environ, libc)
    assert libc.calls == [] and state["applied"] is False and named in state["reason"]


def test_opt_out_and_refusal_are_reported():
    assert allocator.configure({"EBTP_KEEP_MALLOC": "1"}, FakeLibc())["reason"] == \
        "EBTP_KEEP_MALLOC is set"
    assert allocator.configure({"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=1"},
                               FakeLibc())["applied"] is True  # not a malloc tunable
    refused = allocator.configure({}, FakeLibc(answer=0))
    assert refused == {"applied": False, "reason": "mallopt refused the parameters"}
    assert allocator.configure({}, object())["reason"] == "the C library has no mallopt"


FAULTS = textwrap.dedent("""
    import json, os, resource, sys
    sys.path.insert(0, sys.argv[1])
    from eb_torchperf.probe import allocator
    state = allocator.configure()
    import torch
    x = torch.ones(4096, 3072)              # 48 MiB: above glibc's largest mmap threshold
    for _ in range(3):
        torch.nn.functional.gelu(x)
    faults = []
    for _ in range(8):  # per call: a one-off heap growth must not count as a fault per call
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        torch.nn.functional.gelu(x)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    faults.sort()
    print(json.dumps({"state": state, "faults_per_call": faults[len(faults) // 2]}))
""")


def _faults(extra_env):
    torch = pytest.importorskip("torch")  # noqa: F841 -- the child imports it
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    env.update(extra_env)
    out = subprocess.run([sys.executable, "-c", FAULTS, root], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    return json.loads(out.splitlines()[-1])


def test_heap_reuse_removes_the_page_faults_of_a_large_output():
    # 48 MiB of output = 12 288 pages of 4 KiB, faulted in again on every call when
    # glibc maps it fresh (measured: 12 289 per GELU call on the dev VM).
    kept = _faults({"EBTP_KEEP_MALLOC": "1"})
    fixed = _faults({"EBTP_KEEP_MALLOC": "0"})
    assert kept["state"]["applied"] is False
    assert fixed["state"]["applied"] is True
    assert kept["faults_per_call"] > 6000
    assert fixed["faults_per_call"] < 100, (kept, fixed)
