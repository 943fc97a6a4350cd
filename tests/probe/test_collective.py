"""All-reduce with one process per rank (probe/collective.py), on the gloo backend.

The NCCL path is the same code with CUDA tensors; it ran on two H200s (see
reports/examples/h200x2-allreduce.md).  Here the CPU backend checks what the GPU run
cannot show cheaply: every rank runs exactly as many collectives as rank 0, peers
leave cleanly, and failures name the peer.
"""

import json
import os
import subprocess
import sys

import pytest

from eb_torchperf.probe import registry, worker
from eb_torchperf.probe.collective import AllReduceGroup, CollectiveError
from eb_torchperf.probe.registry import Benchmark
from eb_torchperf.measure.runner import ProbeBundle

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():  # pragma: no cover - CPU wheels ship it
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)


def _fake_python(tmp_path, script):
    """A stand-in peer interpreter: a shell script (its arguments are ignored)."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    return fake


def test_every_rank_runs_each_call_once_and_peers_leave_cleanly():
    group = AllReduceGroup(torch, 3, 1024, backend="gloo")
    for _ in range(5):
        group()
    tmp = group.tmp
    group.close()
    # ones, summed over 3 ranks in the set-up collective and in 5 calls: 3 ** 6 each
    assert group.tensor[0].item() == 3.0 ** 6
    assert [proc.returncode for _, proc, _ in group.peers] == [0, 0]
    assert not os.path.exists(tmp)
    assert not torch.distributed.is_initialized()
    group.close()  # idempotent


def test_a_second_group_can_form_after_the_first_closed():
    for world in (2, 2):
        group = AllReduceGroup(torch, world, 16, backend="gloo")
        group()
        group.close()
        assert group.tensor[0].item() == world ** 2


def test_peer_that_cannot_start_is_named_with_its_exit_status(tmp_path):
    fake = _fake_python(tmp_path, "echo 'ModuleNotFoundError: no torch here' >&2\nexit 7\n")
    with pytest.raises(CollectiveError,
                       match=r"^all-reduce peer rank 1 failed to start \(exit status 7\): "
                             r"ModuleNotFoundError: no torch here$"):
        AllReduceGroup(torch, 2, 16, backend="gloo", python=str(fake))
    assert not torch.distributed.is_initialized()


def test_peer_that_died_is_reported_at_the_next_call():
    group = AllReduceGroup(torch, 2, 16, backend="gloo")
    try:
        _, proc, _ = group.peers[0]
        proc.kill()
        proc.wait()
        with pytest.raises(CollectiveError,
                           match=r"^all-reduce peer rank 1 died \(exit status -9\)"):
            group()
    finally:
        group.close()
    assert not torch.distributed.is_initialized()


@pytest.mark.parametrize("args, message", [
    ((1, 16, "gloo"), "an all-reduce group needs 2 or more ranks, not 1"),
    ((2, 16, "mpi"), "unknown backend 'mpi' (choose from nccl, gloo)"),
])
def test_bad_arguments(args, message):
    with pytest.raises(ValueError) as info:
        AllReduceGroup(torch, *args[:2], backend=args[2])
    assert str(info.value) == message


def test_nccl_without_enough_gpus_says_how_many_torch_sees():
    if torch.cuda.device_count() >= 2:
        pytest.skip("this machine has 2 or more GPUs")
    with pytest.raises(ValueError, match=r"^2 ranks need 2 GPUs; torch sees %d$"
                       % torch.cuda.device_count()):
        AllReduceGroup(torch, 2, 16, backend="nccl")


def test_worker_release_and_quit_close_the_peers(monkeypatch):
    """prepare -> run -> release through the worker protocol; a second prepare -> quit."""
    groups = []

    def setup(torch_module, params):
        groups.append(AllReduceGroup(torch_module, params["world"], 256, backend="gloo"))
        return groups[-1]

    bench = Benchmark(name="fake_allreduce", device="cpu", family="communication",
                      params={"quick": ({"world": 2},)}, setup=setup,
                      work=lambda p: (1024.0, "byte"))
    monkeypatch.setitem(registry.REGISTRY, "fake_allreduce", bench)
    req = {"bench": "fake_allreduce", "params": {"world": 2}}
    replies = []
    worker.serve(worker.WorkerState(torch), [
        json.dumps(dict(req, op="prepare", min_sample_s=1e-3, prepare_warmup_s=0)),
        json.dumps(dict(req, op="run", number=4, warmup_s=0, block_s=0.01, min_samples=2)),
        json.dumps(dict(req, op="release")),
        json.dumps(dict(req, op="prepare", min_sample_s=1e-3, prepare_warmup_s=0)),
        json.dumps({"op": "quit"})], replies.append)
    assert [r["ok"] for r in replies] == [True] * 5, replies
    assert len(replies[1]["times_s"]) >= 2
    assert len(groups) == 2
    for group in groups:
        assert group.closed
        assert [proc.returncode for _, proc, _ in group.peers] == [0]
    assert not torch.distributed.is_initialized()


def test_peers_start_from_the_copied_probe_package():
    """In a target interpreter the peers run as `-m ebtp_probe.collective_peer`."""
    code = ("import torch, ebtp_probe.collective as c; g = c.AllReduceGroup(torch, 2, 8, "
            "backend='gloo'); g(); g(); g.close(); "
            "print(c.PEER_MODULE, g.tensor[0].item(), [p.returncode for _, p, _ in g.peers])")
    with ProbeBundle() as bundle:
        env = dict(os.environ, PYTHONPATH=bundle.path)
        out = subprocess.run([sys.executable, "-s", "-c", code], env=env, cwd=bundle.path,
                             capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ebtp_probe.collective_peer", "8.0", "[0]"]


@pytest.mark.parametrize("world, numel, message", [
    (2.0, 16, "world must be a whole number of ranks, not 2.0"),
    ("2", 16, "world must be a whole number of ranks, not '2'"),
    (2, 0, "numel must be a whole number of elements >= 1, not 0"),
    (2, -5, "numel must be a whole number of elements >= 1, not -5"),
])
def test_bad_sizes_are_refused_before_any_peer_starts(world, numel, message):
    with pytest.raises(ValueError) as info:
        AllReduceGroup(torch, world, numel, backend="gloo")
    assert str(info.value) == message


def test_a_second_group_is_refused_and_leaves_the_first_working():
    first = AllReduceGroup(torch, 2, 16, backend="gloo")
    try:
        with pytest.raises(CollectiveError, match="already initialised in this process"):
            AllReduceGroup(torch, 2, 16, backend="gloo")
        first()
        assert first.tensor[0].item() == 4.0
    finally:
        first.close()


def test_call_after_close_says_so():
    group = AllReduceGroup(torch, 2, 16, backend="gloo")
    group.close()
    with pytest.raises(CollectiveError, match="^all-reduce group is closed$"):
        group()


def test_peer_on_another_torch_is_refused_at_once(tmp_path):
    fake = _fake_python(tmp_path, "echo 'ready 0.0.1'\nexec sleep 60\n")
    with pytest.raises(CollectiveError) as info:
        AllReduceGroup(torch, 2, 16, backend="gloo", python=str(fake))
    assert str(info.value) == ("all-reduce peer rank 1 runs torch 0.0.1, rank 0 torch %s"
                               % torch.__version__)


def test_missing_interpreter_is_named():
    with pytest.raises(CollectiveError, match=r"^all-reduce peer rank 1 cannot start "
                                              r"/nonexistent/python: No such file"):
        AllReduceGroup(torch, 2, 16, backend="gloo", python="/nonexistent/python")


def test_rendezvous_files_live_in_the_bundle_when_run_from_it():
    """A worker killed by the host cannot clean up; the host removes its bundle."""
    code = ("import torch, ebtp_probe.collective as c; g = c.AllReduceGroup(torch, 2, 8, "
            "backend='gloo'); print(g.tmp); g.close()")
    with ProbeBundle() as bundle:
        env = dict(os.environ, PYTHONPATH=bundle.path)
        out = subprocess.run([sys.executable, "-s", "-c", code], env=env, cwd=bundle.path,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        assert os.path.dirname(out.stdout.strip()) == bundle.path


def test_peer_that_dies_after_ready_is_named_when_the_rendezvous_fails(tmp_path, monkeypatch):
    import eb_torchperf.probe.collective as collective
    monkeypatch.setattr(collective, "RENDEZVOUS_TIMEOUT_S", 3.0)
    fake = _fake_python(tmp_path, "echo 'ready %s'\necho 'bind failed: no such interface' >&2\n"
                                "exit 1\n" % torch.__version__)
    with pytest.raises(CollectiveError) as info:
        AllReduceGroup(torch, 2, 16, backend="gloo", python=str(fake))
    assert str(info.value) == ("all-reduce peer rank 1 died (exit status 1): bind failed: "
                               "no such interface")
    assert not torch.distributed.is_initialized()


def test_peer_without_a_version_is_refused(tmp_path):
    fake = _fake_python(tmp_path, "echo ready\nexec sleep 60\n")
    with pytest.raises(CollectiveError, match=r"^all-reduce peer rank 1 runs torch \(unknown\)"):
        AllReduceGroup(torch, 2, 16, backend="gloo", python=str(fake))
