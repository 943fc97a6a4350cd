"""Workers forked from a zygote: safe-fork proof, the worker protocol, exit statuses."""

import os
import signal

import pytest

from eb_torchperf.errors import ProbeError
from eb_torchperf.measure.runner import ProbeBundle
from eb_torchperf.measure.zygote import Zygote
from eb_torchperf.probe.zygote import fork_problem


class _Torch:
    class cuda:
        @staticmethod
        def is_initialized():
            return False


def test_fork_problem_names_threads_started_by_torch():
    assert fork_problem(_Torch, 1, 1, 1) is None
    assert "import torch" in fork_problem(_Torch, 1, 1, 3)
    assert "cannot count" in fork_problem(_Torch, None, 1, 1)


def test_fork_problem_refuses_a_cuda_context():
    class Cuda(_Torch):
        class cuda:
            @staticmethod
            def is_initialized():
                return True
    assert "CUDA" in fork_problem(Cuda, 1, 1, 1)


@pytest.fixture
def zygote(wheel_python):
    with ProbeBundle() as bundle:
        z = Zygote(wheel_python, bundle.path, "target")
        z.start()
        yield z
        z.close()


def test_forked_workers_serve_and_are_fresh_processes(zygote):
    assert zygote.fork_safe, zygote.reason
    pids = set()
    for _ in range(2):
        worker = zygote.fork_worker("target")
        hello = worker.wait_started()
        assert hello["forked"] and hello["pid"] != zygote.hello["pid"]
        pids.add(hello["pid"])
        reply = worker.request("availability", 60, bench="dispatch")
        assert reply["ok"] and reply["reason"] is None
        worker.close()
        assert not worker.alive()
    assert len(pids) == 2


def test_a_crashed_forked_worker_reports_its_signal(zygote):
    worker = zygote.fork_worker("target")
    worker.wait_started()
    os.kill(worker.hello["pid"], signal.SIGSEGV)
    with pytest.raises(ProbeError) as info:
        worker.request("availability", 60, bench="dispatch")
    assert info.value.exit_code == -signal.SIGSEGV and "SIGSEGV" in str(info.value)
    worker.close()
