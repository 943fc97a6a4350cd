"""Host side of cheap fresh workers: one zygote per side forks the workers of each pair.

A `Zygote` is a Worker started as `python -s -m ebtp_probe --zygote` (probe.zygote): it
imports torch once and says in its hello whether forking it is safe.  `fork_worker()`
gives a `ForkedWorker`, which the runner uses exactly like a spawned Worker (spawn,
wait_started, request, alive, kill, close).  Measured on the H200 host (issue 26): a
fresh interpreter with torch costs ~5 s, a fork ~7 ms.
"""

import os
import signal
import socket
import time
from typing import List, Optional

from eb_torchperf.errors import ProbeError
from eb_torchperf.measure.runner import PROBE_PACKAGE, Worker
from eb_torchperf.probe.nocwd import module_argv


def worker_conditions(modes: List[str], zygote_pairs: int, cpus: int) -> dict:
    """AuditResult.conditions' worker part: worker_mode "fork" when every side forked
    (else "spawn", with spawn_reason), zygote_pairs, allowed_cpus.

    Args:
        modes: per side "fork" or "spawn: <why>" ("spawn" when no zygote was tried).
    """
    mode = "fork" if modes and all(m == "fork" for m in modes) else "spawn"
    out = {"worker_mode": mode, "allowed_cpus": cpus,
           "zygote_pairs": zygote_pairs if mode == "fork" else None}
    why = sorted({m[len("spawn: "):] for m in modes if m.startswith("spawn: ")})
    if why:
        out["spawn_reason"] = "; ".join(why)
    return out


class Zygote(Worker):
    """A zygote process for one side (interpreter + environment overrides).

    Attributes (after wait_started): fork_safe (bool) and reason (why not, "" if safe).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._channel: Optional[socket.socket] = None
        self._child_end: Optional[socket.socket] = None
        self.fork_safe = False
        self.reason = "not started"

    def argv_for(self, reply_fd: int):
        return module_argv(self.python, PROBE_PACKAGE, "--zygote", "--reply-fd",
                           str(reply_fd), "--fd-socket", str(self._child_end.fileno()))

    def extra_fds(self) -> tuple:
        return (self._child_end.fileno(),)

    def spawn(self) -> None:
        """Start the zygote without waiting (Worker.spawn), with its fd socket."""
        self._channel, self._child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            super().spawn()
        finally:
            self._child_end.close()

    def wait_started(self) -> dict:
        hello = super().wait_started()
        self.fork_safe = bool(hello.get("fork_safe"))
        self.reason = hello.get("reason") or ("" if self.fork_safe else "no fork_safe in hello")
        return hello

    def fork_worker(self, label: str) -> "ForkedWorker":
        """A new worker forked from this zygote (started; its hello is still to read).

        Raises:
            ProbeError: the zygote died, hung, or refused to fork.
        """
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            socket.send_fds(self._channel, [b"f"], [req_r, rep_w])
            reply = self.request("fork", self.start_timeout_s)
        except OSError as exc:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise ProbeError("%s %s: the zygote cannot fork: %s" % (self.label, self.python, exc),
                             self.argv, None, self.stderr_tail()) from None
        finally:
            os.close(req_r)
            os.close(rep_w)
        if not reply.get("ok"):
            os.close(req_w)
            os.close(rep_r)
            raise ProbeError("%s %s: the zygote did not fork: %s" % (
                self.label, self.python, reply.get("message")), self.argv, None,
                self.stderr_tail())
        return ForkedWorker(self, label, reply["pid"], req_w, rep_r)

    def close(self) -> None:
        super().close()
        if self._channel is not None:
            self._channel.close()
            self._channel = None


class _ForkedProcess:
    """The Popen-like handle of a process that is the zygote's child, not ours: the
    zygote reaps it and tells its exit status (op "poll")."""

    def __init__(self, pid: int, request_fd: int, zygote: Zygote):
        self.pid = pid
        self.stdin = os.fdopen(request_fd, "wb")
        self.returncode = None
        self._zygote = zygote

    def poll(self):
        if self.returncode is None:
            try:
                reply = self._zygote.request("poll", 10, pid=self.pid)
            except ProbeError:  # the zygote is gone: ask the kernel instead
                reply = {"gone": not _exists(self.pid), "exit_code": None}
            if reply.get("gone"):
                code = reply.get("exit_code")
                self.returncode = code if code is not None else -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float = None):
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return self.returncode


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ForkedWorker(Worker):
    """A worker forked from `zygote`; the same interface as a spawned Worker."""

    def __init__(self, zygote: Zygote, label: str, pid: int, request_fd: int, reply_fd: int):
        super().__init__(zygote.python, zygote.bundle_dir, label, zygote.env_overrides,
                         zygote.start_timeout_s)
        self.argv = tuple(zygote.argv) + ("(fork %d)" % pid,)
        self.proc = _ForkedProcess(pid, request_fd, zygote)
        self._reply_fd = reply_fd
        self._zygote = zygote

    def spawn(self) -> None:
        """Already running (forked by the zygote)."""

    def stderr_tail(self) -> str:
        """The zygote's output file, which its children share."""
        return self._zygote.stderr_tail()


    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait(timeout=30)

    def close(self) -> None:
        super().close()
        if self.proc is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

