"""Zygote: import torch once, then fork fresh benchmark workers on request.

Why (issue 26): a fresh interpreter that imports torch costs ~5 s on the 16-core H200
host, so an audit could afford 3 worker pairs per row, too few to average the spread
between processes.  A fork of a process that imported torch and ran nothing parallel
costs ~7 ms, and its children vary between themselves as much as fresh interpreters
do (fresh heap use, fresh OpenMP/MKL/oneDNN thread pools, a fresh CUDA context on
first use): they sample the same per-process spread at a fraction of the cost.

Fork is safe only while the zygote has one thread and no CUDA context (a forked child
gets only the forking thread; a CUDA context does not survive fork).  The hello says
whether that holds (`fork_safe`, `reason`); the host falls back to spawned workers
where it does not.

Protocol: requests on stdin, replies on --reply-fd, as a worker.  Op "fork": the host
first sends the child's two descriptors (request read end, reply write end) over the
Unix socket --fd-socket (SCM_RIGHTS, Python 3.9+), then the request line; the reply
holds the child's pid.  Op "poll" {pid}: the child's exit status once it ended (the
zygote reaps its children; None while it runs).  The child starts a new session (the host kills its process
group), says hello on its reply descriptor and serves worker requests
(probe.worker.serve) until quit or end of input, then exits without returning here.
"""

import json
import os
import signal
import socket
import sys

from . import allocator, registry, worker
from .parentdeath import die_with_parent


def thread_count():
    """Threads of this process (/proc/self/task), None where that cannot be read."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


def _openblas_loaded():
    try:
        with open("/proc/self/maps") as handle:
            return "openblas" in handle.read().lower()
    except OSError:
        return False


def fork_problem(torch, before_torch, after_numpy, after_torch):
    """Why forking this process is unsafe, or None.

    Args:
        torch: the imported module.
        before_torch, after_numpy, after_torch: thread_count() before anything was
            imported, after `import numpy` (torch imports it anyway), after `import torch`.

    Unsafe: a thread that the torch import started (an OpenMP pool: libgomp keeps no
    fork handler, and a child that uses a pool copied mid-state hangs); threads that
    numpy's import started unless they are OpenBLAS's pool (OpenBLAS shuts its pool down
    at fork, pthread_atfork in driver/others/memory.c, and the child starts a new one);
    an initialised CUDA context (it does not survive fork); no socket.recv_fds.
    """
    if None in (before_torch, after_numpy, after_torch):
        return "cannot count this process's threads (/proc/self/task)"
    if after_torch != after_numpy:
        return "import torch (and the suites) started %d thread(s)" % (after_torch - after_numpy)
    if after_numpy != before_torch and not _openblas_loaded():
        return "import numpy started %d thread(s) of no known fork-safe pool" % (
            after_numpy - before_torch)
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        return "CUDA was initialised at import"
    if not hasattr(socket, "recv_fds"):
        return "Python %d.%d has no socket.recv_fds (3.9+)" % sys.version_info[:2]
    return None


def _child(torch, zygote_fds, fds):
    """In the forked child: new session, own descriptors, hello, serve; never returns."""
    status = 0
    try:
        os.setsid()
        die_with_parent()  # the zygote's death (the runner's, by the zygote's) ends it
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in zygote_fds:
            os.close(fd)
        null = os.open(os.devnull, os.O_RDONLY)
        if null != 0:
            os.dup2(null, 0)  # the zygote's request pipe is not the child's
            os.close(null)
        requests = os.fdopen(fds[0], "r")
        out = os.fdopen(fds[1], "w", buffering=1)

        def send(obj):
            out.write(json.dumps(obj) + "\n")
            out.flush()

        send({"ok": True, "hello": {"torch_version": torch.__version__, "pid": os.getpid(),
                                    "executable": sys.executable, "forked": True}})
        worker.serve(worker.WorkerState(torch), requests, send)
    except BaseException:  # noqa: BLE001 -- the host sees the end of the reply pipe
        status = 3
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _fork(torch, channel, zygote_fds):
    _, fds, _, _ = socket.recv_fds(channel, 16, 2)
    if len(fds) != 2:
        raise RuntimeError("fork needs 2 descriptors, got %d" % len(fds))
    pid = os.fork()
    if pid == 0:
        _child(torch, zygote_fds, fds)
    for fd in fds:
        os.close(fd)
    return {"pid": pid}


def _poll(pid):
    """{"exit_code": the child's exit status (negative: the signal), or None while it
    runs}; a child that is not ours (or already reaped) reads "unknown": None, gone."""
    try:
        done, status = os.waitpid(int(pid), os.WNOHANG)
    except (ChildProcessError, TypeError, ValueError):
        return {"exit_code": None, "gone": True}
    if not done:
        return {"exit_code": None}
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    return {"exit_code": code, "gone": True}


def _serve_forks(torch, problem, channel, send, zygote_fds):
    """Answer fork/poll requests on stdin until quit or end of input."""
    for line in sys.stdin:
        req = json.loads(line) if line.strip() else {}
        if req.get("op") == "quit":
            send({"ok": True})
            return
        if req.get("op") == "poll":
            send(dict(_poll(req.get("pid")), ok=True))
            continue
        if req.get("op") != "fork" or problem:
            send({"ok": False, "exc_type": "ValueError",
                  "message": problem or "a zygote only forks (op %r)" % req.get("op")})
            continue
        try:
            reply = _fork(torch, channel, zygote_fds)
            reply["ok"] = True
        except Exception as exc:  # noqa: BLE001 -- reported to the host
            reply = {"ok": False, "exc_type": type(exc).__name__, "message": str(exc)}
        send(reply)


def main(reply_fd, fd_socket):
    """Import torch, say hello (with fork_safe), fork workers on request.  Returns
    the process exit status."""
    out = os.fdopen(reply_fd, "w", buffering=1)

    def send(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    worker.apply_affinity(os.environ.get(worker.AFFINITY_VAR))
    allocator.configure()
    counts = [thread_count()]
    try:
        import numpy  # noqa: F401 -- torch imports it too; its threads are counted apart
    except BaseException:  # noqa: BLE001 -- torch without numpy is fine
        pass
    counts.append(thread_count())
    torch = worker.import_torch(send)
    if torch is None:
        return 3
    counts.append(thread_count())
    problem = fork_problem(torch, *counts)
    send({"ok": True, "hello": {"torch_version": torch.__version__, "pid": os.getpid(),
                                "executable": sys.executable, "fork_safe": problem is None,
                                "reason": problem or ""}})
    _serve_forks(torch, problem, socket.socket(fileno=fd_socket), send,
                 (reply_fd, fd_socket))
    return 0
