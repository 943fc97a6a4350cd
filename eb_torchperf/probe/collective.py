"""All-reduce with one process per device, driven from the worker (rank 0).

How multi-GPU jobs really run (torchrun, srun, nccl-tests' MPI mode): one process per
GPU, each in a torch.distributed process group.  The worker becomes rank 0; ranks
1..n-1 are peer processes of the same interpreter and environment
(`python -s -m ebtp_probe.collective_peer`), started in the worker's process group so
the host's kill of a hung worker also ends them.

Lockstep without touching the timed GPU work: each timed call writes one byte per
peer to the peer's stdin (b"r" = issue one all-reduce) and then issues rank 0's own
all-reduce.  Peers read their pipe and issue theirs, so every rank runs the same
number of collectives and nothing extra is put on a GPU stream (a flag tensor or a
control collective would add a kernel to every call).  b"q" or end of input ends a
peer: it waits for its device, says "done", leaves the process group and exits 0.

Bus bandwidth as nccl-tests reports it
(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): bytes x 2(n-1)/n.

Backends: "nccl" (one CUDA device per rank: rank r uses cuda:r) and "gloo" (CPU
tensors; what the tests use where there is no GPU).
"""

import datetime
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

from .nocwd import module_argv

#: Seconds a peer gets to import torch and say it is ready (torch 2.11 + CUDA 13
#: imported in 3-4 s on the H200 machine; a cold file cache can take much longer).
PEER_START_TIMEOUT_S = 120.0
#: Seconds for the process-group rendezvous once every peer is ready.
RENDEZVOUS_TIMEOUT_S = 60.0
#: Seconds a peer gets to leave the group at close before it is killed.
PEER_EXIT_TIMEOUT_S = 30.0
PEER_MODULE = __package__ + ".collective_peer" if __package__ else "collective_peer"
BACKENDS = ("nccl", "gloo")
#: Name of the copied probe package (runner.PROBE_PACKAGE): its parent folder is the
#: host's temporary bundle, removed by the host even when it had to kill the worker.
BUNDLED_PACKAGE = "ebtp_probe"


class CollectiveError(RuntimeError):
    """A peer did not start or died, or the process group failed; names the peer."""


def tensor_device(torch, backend, rank):
    """The device rank `rank` holds its tensor on: cuda:rank for NCCL, cpu for gloo."""
    return torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")


def _scratch_root():
    """Where rendezvous files go: inside the host's bundle when running from it (so a
    killed worker leaves nothing behind), else the system temporary folder."""
    if __package__ == BUNDLED_PACKAGE:
        return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return None


def _check_args(torch, world, numel, backend):
    if isinstance(world, bool) or not isinstance(world, int):
        raise ValueError("world must be a whole number of ranks, not %r" % (world,))
    if world < 2:
        raise ValueError("an all-reduce group needs 2 or more ranks, not %d" % world)
    if isinstance(numel, bool) or not isinstance(numel, int) or numel < 1:
        raise ValueError("numel must be a whole number of elements >= 1, not %r" % (numel,))
    if backend not in BACKENDS:
        raise ValueError("unknown backend %r (choose from %s)" % (backend, ", ".join(BACKENDS)))
    if backend == "nccl" and torch.cuda.device_count() < world:
        raise ValueError("%d ranks need %d GPUs; torch sees %d"
                         % (world, world, torch.cuda.device_count()))
    if torch.distributed.is_initialized():
        raise CollectiveError("torch.distributed is already initialised in this process "
                              "(one all-reduce group at a time)")


class AllReduceGroup:
    """A process group of `world` ranks; the instance is the timed zero-argument callable.

    Calling it issues one all-reduce (sum, float32) of `numel` elements on every rank
    (asynchronous on CUDA; the worker synchronises around its samples).  `close()`
    ends the peers and leaves the group; it is idempotent and also runs when the
    worker releases the benchmark.

    Args:
        torch: the imported torch module (torch.distributed available).
        world: number of ranks (processes), >= 2; with NCCL, one GPU each.
        numel: float32 elements per rank (4 bytes each), >= 1.
        backend: "nccl" or "gloo".
        python: interpreter of the peers (default: this one); it must import the same
            torch version.

    Raises:
        ValueError: a bad world, numel or backend, or fewer GPUs than ranks (before any
            process starts).
        CollectiveError: torch.distributed already in use in this process, a peer that
            failed to start, runs another torch, or died; the message names the peer
            with its exit status and last stderr line.
    """

    def __init__(self, torch, world, numel, backend="nccl", python=None):
        _check_args(torch, world, numel, backend)
        self.torch, self.world, self.numel, self.backend = torch, world, numel, backend
        self.dist = torch.distributed
        self.peers = []
        self.closed = False
        self.joined = False  # this object formed the process group (and must leave it)
        self.broken = False  # a collective failed: peers are killed at close, not asked
        self.tmp = tempfile.mkdtemp(prefix="ebtp-collective-", dir=_scratch_root())
        try:
            self._start_peers(python or sys.executable)
            self._join()
        except BaseException:
            self.close()
            raise

    def _start_peers(self, python):
        self.store = os.path.join(self.tmp, "store")
        for rank in range(1, self.world):
            err = open(os.path.join(self.tmp, "peer%d.err" % rank), "w+b")
            cmd = module_argv(python, PEER_MODULE, "--rank", str(rank),
                              "--world", str(self.world), "--store", self.store,
                              "--numel", str(self.numel), "--backend", self.backend)
            try:
                proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=err, env=dict(os.environ))
            except OSError as exc:
                err.close()
                raise CollectiveError("all-reduce peer rank %d cannot start %s: %s"
                                      % (rank, python, exc.strerror or exc)) from None
            self.peers.append((rank, proc, err))
        deadline = time.monotonic() + PEER_START_TIMEOUT_S
        for rank, proc, _ in self.peers:
            self._wait_ready(rank, proc, deadline)

    def _peer_failure(self, rank, proc, what):
        try:  # its stdout may close a moment before it can be reaped
            code = proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        err = next(e for r, _, e in self.peers if r == rank)
        err.flush()
        err.seek(0)
        lines = [line for line in err.read().decode(errors="replace").splitlines() if line.strip()]
        status = "still running" if code is None else "exit status %d" % code
        return CollectiveError("all-reduce peer rank %d %s (%s)%s" % (
            rank, what, status, ": " + lines[-1].strip() if lines else ""))

    def _wait_ready(self, rank, proc, deadline):
        line = self._wait_line(proc, b"ready", deadline)
        if line is None:
            raise self._peer_failure(rank, proc, "not ready after %.0f s" % PEER_START_TIMEOUT_S
                                     if time.monotonic() >= deadline else "failed to start")
        theirs, ours = line[len(b"ready"):].strip().decode(errors="replace"), self.torch.__version__
        if theirs != ours:
            raise CollectiveError("all-reduce peer rank %d runs torch %s, rank 0 torch %s"
                                  % (rank, theirs or "(unknown)", ours))

    @staticmethod
    def _wait_line(proc, prefix, deadline):
        """Read `proc`'s stdout until a line starting with `prefix` (returned), EOF or
        the deadline (None)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
            if ready:
                line = proc.stdout.readline()
                if not line:
                    return None
                if line.startswith(prefix):
                    return line.strip()
            elif proc.poll() is not None:
                return None

    def _join(self):
        if self.backend == "nccl":
            self.torch.cuda.set_device(0)
        try:
            self.dist.init_process_group(
                self.backend, init_method="file://" + self.store, rank=0, world_size=self.world,
                timeout=datetime.timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
        except Exception as exc:  # noqa: BLE001 -- "Wait timeout" names no rank
            raise self._failure("rendezvous", exc) from None
        self.joined = True
        self.tensor = self.torch.ones(self.numel, dtype=self.torch.float32,
                                      device=tensor_device(self.torch, self.backend, 0))
        # The first collective builds the communicator (seconds with NCCL): do it here,
        # not in the timed calls.  The peers run it unasked (collective_peer.serve).
        self._all_reduce()
        if self.backend == "nccl":
            self.torch.cuda.synchronize()

    def _failure(self, stage, exc):
        """A CollectiveError for a backend error: the first dead peer if there is one
        (its exit status and last stderr line), else the backend's first line.  The
        group is marked broken: close() then kills the peers instead of waiting."""
        self.broken = True
        dead = [(rank, proc) for rank, proc, _ in self.peers if proc.poll() is not None]
        if dead:
            return self._peer_failure(dead[0][0], dead[0][1], "died")
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return CollectiveError("%s of %d ranks failed: %s" % (stage, self.world, first))

    def _all_reduce(self):
        try:
            self.dist.all_reduce(self.tensor)
        except Exception as exc:  # noqa: BLE001 -- backend errors name no rank
            raise self._failure("all-reduce", exc) from None

    def __call__(self):
        if self.closed:
            raise CollectiveError("all-reduce group is closed")
        for rank, proc, _ in self.peers:
            try:
                proc.stdin.write(b"r")
                proc.stdin.flush()
            except BrokenPipeError:
                raise self._peer_failure(rank, proc, "died") from None
        self._all_reduce()

    def close(self):
        """End the peers and leave the process group; remove the rendezvous files.

        After a complete set-up the peers are asked to finish (b"q") and leave first;
        after a failed one they are killed at once (they may never have joined)."""
        if self.closed:
            return
        self.closed = True
        graceful = (self.joined and not self.broken
                    and all(proc.poll() is None for _, proc, _ in self.peers))
        deadline = time.monotonic() + (PEER_EXIT_TIMEOUT_S if graceful else 0)
        for _, proc, _ in self.peers:
            try:
                proc.stdin.write(b"q")
                proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
        if graceful:
            for _, proc, _ in self.peers:
                self._wait_line(proc, b"done", deadline)
        try:
            if self.joined:
                if self.backend == "nccl":
                    self.torch.cuda.synchronize()
                self.dist.destroy_process_group()
        finally:
            for _, proc, err in self.peers:
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                proc.stdout.close()
                err.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
