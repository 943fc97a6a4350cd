"""Host side of the probe: bundle it, start workers in target interpreters, talk to them.

A worker is `PYTHON -s -m ebtp_probe --worker --reply-fd N` started in a new process
group with an allow-listed environment whose PYTHONPATH starts with a temporary
folder holding only the probe package and threadpoolctl (copied from the host's
installation: nothing is installed into the target).  `-s` drops the user site but not
PYTHONPATH / EBPYTHONPREFIXES, which EasyBuild modules use to put torch on the path.
Every read has a deadline; a worker that hangs is killed with its process group.
"""

import importlib.util
import json
import os
import pathlib
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Mapping, Optional, Sequence

from eb_torchperf.errors import ConfigError, ProbeError
from eb_torchperf.measure.environ import apply_overrides
from eb_torchperf.probe.envprefixes import ENV_NAMES, ENV_PREFIXES
from eb_torchperf.probe.nocwd import module_argv

PROBE_PACKAGE = "ebtp_probe"
#: Environment variables passed to workers: the run-time environment of the user's
#: torch (module settings included), nothing of the host's tool chain.  Every variable
#: the probe records (probe.envprefixes: OpenMP, BLAS, oneDNN, CUDA, NCCL, Triton,
#: glibc, LD_*, ...) passes, so a setting in the user's shell reaches the workers;
#: EBTP_* are the probe's own switches (affinity of a trial, smoke compile).
ENV_ALLOW = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|LANG|LC_\w+|TZ|TMPDIR|PYTHONHOME|VIRTUAL_ENV|CONDA_PREFIX|"
    r"EBROOT\w+|EBVERSION\w+|SLURM_\w+|EBTP_\w+|"
    + "|".join(re.escape(p) + r"\w*" for p, _, _ in ENV_PREFIXES)
    + "|" + "|".join(re.escape(n) for n in ENV_NAMES) + ")$")
#: Seconds to wait for `import torch` and the hello line (a cold NFS import is slow).
DEFAULT_START_TIMEOUT_S = 180.0
STDERR_TAIL_LINES = 12


def worker_env(base: Mapping[str, str], bundle_dir: str,
               overrides: Optional[Mapping[str, Optional[str]]] = None) -> Dict[str, str]:
    """Environment of a worker: allow-listed `base`, bundle first on PYTHONPATH.

    Args:
        base: usually os.environ.
        bundle_dir: folder holding the `ebtp_probe` package.
        overrides: variables to set (value) or remove (None), e.g. a remedy trial.
    """
    env = apply_overrides({k: v for k, v in base.items() if ENV_ALLOW.match(k)}, overrides)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (bundle_dir, env.get("PYTHONPATH")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


#: An exception line ("ModuleNotFoundError: ...", "torch.OutOfMemoryError: ..."), a
#: fatal interpreter error, or a tool's "x: error: ..." line.
_TELLING = re.compile(r"^([\w.]+(Error|Exception|Interrupt)\b|Fatal Python error|\S+: error:)")


def telling_line(text: str) -> str:
    """The stderr line that says most about a crash: the last one naming an error or a
    fatal condition, else the last non-empty one.  A Python that cannot start ends its
    output with "  <no Python frame>"; the cause ("ModuleNotFoundError: No module named
    'encodings'") comes a few lines before."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "no output on stderr"
    for line in reversed(lines):
        if _TELLING.match(line):
            return line
    return lines[-1]


class ProbeBundle:
    """A temporary folder with the probe package and threadpoolctl; a context manager."""

    def __init__(self):
        self.path = None

    def __enter__(self) -> "ProbeBundle":
        """Raises: ConfigError: $TMPDIR is full or cannot be written (one line)."""
        try:
            self.path = tempfile.mkdtemp(prefix="eb_torchperf-probe-")
            source = pathlib.Path(__file__).parent.parent / "probe"
            shutil.copytree(source, os.path.join(self.path, PROBE_PACKAGE),
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            # find_spec, not import: importing threadpoolctl sets KMP_DUPLICATE_LIB_OK in
            # os.environ, which would then leak into every worker's environment.
            spec = importlib.util.find_spec("threadpoolctl")
            if spec is not None and spec.origin:
                shutil.copy(spec.origin, self.path)
            # else the probe reports threadpools as unavailable
        except OSError as exc:  # shutil.Error lists every file: keep the first reason
            if self.path:
                shutil.rmtree(self.path, ignore_errors=True)
            why = str(exc.args[0][0][2]) if isinstance(exc, shutil.Error) else (
                exc.strerror or str(exc))
            what = ("no space left in $TMPDIR %s" if "No space left" in why
                    else "cannot write into $TMPDIR %s: " + why) % tempfile.gettempdir()
            raise ConfigError("%s (the probe is copied there); free space or set TMPDIR to "
                              "another folder" % what) from None
        return self

    def __exit__(self, *exc_info):
        shutil.rmtree(self.path, ignore_errors=True)


class Worker:
    """One long-lived probe worker process in a target interpreter.

    Args:
        python: path of the target interpreter.
        bundle_dir: ProbeBundle.path.
        label: "target" or "reference" (for messages).
        env_overrides: variables to set/remove for this worker only.
        start_timeout_s: deadline for `import torch` and the hello.
    """

    def __init__(self, python: str, bundle_dir: str, label: str = "target",
                 env_overrides: Optional[Mapping[str, Optional[str]]] = None,
                 start_timeout_s: float = DEFAULT_START_TIMEOUT_S):
        self.python, self.label = python, label
        self.bundle_dir, self.env_overrides = bundle_dir, env_overrides
        self.start_timeout_s = start_timeout_s
        self.proc = None
        self.argv: Sequence[str] = ()
        self.hello = None
        self._buffer = b""
        self._stderr = None
        self._reply_fd = None

    def argv_for(self, reply_fd: int) -> Sequence[str]:
        """Command line of the worker writing its replies to `reply_fd`."""
        return module_argv(self.python, PROBE_PACKAGE, "--worker", "--reply-fd", str(reply_fd))

    def start(self) -> dict:
        """Start the process and wait for its hello (spawn, then wait_started).

        Returns:
            the hello dict (torch_version, pid, executable).

        Raises:
            ProbeError: the interpreter cannot start, torch fails to import, or no hello
                within start_timeout_s.
        """
        self.spawn()
        return self.wait_started()

    def spawn(self) -> None:
        """Start the process without waiting: two workers then import torch at the same
        time (the audit starts both sides of a pair so; one import less per pair).

        Raises:
            ProbeError: the interpreter cannot start.
        """
        read_fd, write_fd = os.pipe()
        self._stderr = tempfile.TemporaryFile()
        env = worker_env(os.environ, self.bundle_dir, self.env_overrides)
        self.argv = self.argv_for(write_fd)
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=self._stderr, stderr=self._stderr,
                pass_fds=(write_fd,) + self.extra_fds(), start_new_session=True, env=env)
        except OSError as exc:
            os.close(read_fd)
            raise ProbeError("%s %s: cannot start: %s" % (self.label, self.python,
                                                          exc.strerror or exc),
                             self.argv) from None
        finally:
            os.close(write_fd)
        self._reply_fd = read_fd

    def extra_fds(self) -> tuple:
        """More descriptors the process inherits (a zygote's socket); none here."""
        return ()

    def wait_started(self) -> dict:
        """Wait for the hello of a spawned worker; see start()."""
        reply = self.receive(self.start_timeout_s, "starting (import torch)")
        if not reply.get("ok"):
            self.kill()
            raise ProbeError("%s %s: %s failed: %s: %s%s" % (
                self.label, self.python, reply.get("stage", "start"), reply.get("exc_type"),
                reply.get("message"), self._pythonpath_note()), self.argv, self.proc.returncode,
                self.stderr_tail())
        self.hello = reply["hello"]
        return self.hello

    def _pythonpath_note(self) -> str:
        """What an environment override of PYTHONPATH did, for a failed start: it
        replaces the PYTHONPATH an EasyBuild module finds torch through."""
        overrides = self.env_overrides or {}
        if "PYTHONPATH" not in overrides:
            return ""
        before = os.environ.get("PYTHONPATH")
        return (" (--target-env PYTHONPATH=%s replaced this environment's PYTHONPATH%s; to add "
                "a folder, give PYTHONPATH=FOLDER:$PYTHONPATH)"
                % (overrides["PYTHONPATH"] or "", " %s" % before if before else " (unset)"))

    def request(self, op: str, timeout_s: float, **fields) -> dict:
        """Send one request and return its reply (which may say ok: false).

        Raises:
            ProbeError: the worker died, or gave no reply within timeout_s (it is killed).
        """
        return self.receive(timeout_s, self.send(op, **fields))

    def send(self, op: str, **fields) -> str:
        """Send one request without waiting; returns what it asks for, for `receive`'s
        messages.  Every send must be followed by one receive, in order."""
        line = json.dumps(dict(fields, op=op)) + "\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the read in receive reports the death with its exit status
        return op + (" " + fields["bench"] if "bench" in fields else "")

    def receive(self, timeout_s: float, what: str) -> dict:
        """The reply to the oldest request sent and not yet received (`what` names it
        in the errors).

        Raises:
            ProbeError: the worker died, gave no reply within timeout_s, or sent a line
                that is not a JSON reply (it is killed).
        """
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready = select.select([self._reply_fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                self.kill()
                raise ProbeError("%s %s: no answer after %.0f s while %s; the worker was killed "
                                 "(raise --timeout if the build is just very slow)"
                                 % (self.label, self.python, timeout_s, what),
                                 self.argv, None, self.stderr_tail())
            chunk = os.read(self._reply_fd, 65536)
            if not chunk:
                raise self._died(what)
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            self.kill()
            text = line.decode("utf-8", "replace")
            raise ProbeError("%s %s: the worker sent a line that is not a JSON reply while %s: "
                             "%r; the worker was killed" % (self.label, self.python, what,
                                                           text[:200]),
                             self.argv, None, self.stderr_tail())
        return reply

    def _died(self, what: str) -> ProbeError:
        code = self.proc.wait(timeout=30)
        how = ("killed by signal %s" % signal.Signals(-code).name if code < 0
               else "exited with status %d" % code)
        tail = self.stderr_tail()
        return ProbeError("%s %s: worker %s while %s (%s)" % (self.label, self.python, how,
                                                              what, telling_line(tail)),
                          self.argv, code, tail)

    def alive(self) -> bool:
        """True while the worker process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stderr_tail(self) -> str:
        """Last STDERR_TAIL_LINES lines the worker printed (stdout and stderr)."""
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").splitlines()
        return "\n".join(lines[-STDERR_TAIL_LINES:])

    def kill(self) -> None:
        """Kill the worker's whole process group (idempotent)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)

    def close(self) -> None:
        """Ask a started worker to quit, then make sure its process group is gone (one
        that never said hello cannot answer "quit": it is killed at once, so Ctrl-C
        during a hung start-up does not wait 10 s)."""
        if self.proc is not None and self.proc.poll() is None and self.hello is not None:
            try:
                self.request("quit", timeout_s=10)
            except ProbeError:
                pass  # killed below either way
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        if self._reply_fd is not None:
            os.close(self._reply_fd)
            self._reply_fd = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> "Worker":
        self.start()
        return self

    def __exit__(self, *exc_info):
        self.close()


def run_probe(python: str, timeout_s: float = DEFAULT_START_TIMEOUT_S,
              env_overrides: Optional[Mapping[str, Optional[str]]] = None) -> dict:
    """Collect the facts of `python`'s torch once (no benchmarks).

    Returns:
        the probe's facts dict (see probe.facts.collect_all).

    Raises:
        ProbeError: as Worker.start / Worker.request; also when collecting fails.
    """
    with ProbeBundle() as bundle, Worker(python, bundle.path, "target", env_overrides,
                                         timeout_s) as worker:
        reply = worker.request("facts", timeout_s)
    if not reply.get("ok"):
        raise ProbeError("%s: facts failed: %s" % (python, reply.get("message")))
    return reply["facts"]


def failure(reply: dict) -> str:
    """"ExcType: message" of a reply that answered ok: false (probe.worker)."""
    return "%s: %s" % (reply.get("exc_type"), reply.get("message"))


def exchange(workers: Sequence, op: str, timeout_s: float, **fields) -> List[dict]:
    """Send `op` to every worker, then read each reply: the workers run it at the same
    time (prepare: both sides' set-up, calibration and warm-up overlap).  Workers
    without `send` (test doubles) are asked one after the other.

    Raises:
        ProbeError: a worker died or gave no reply within timeout_s.
    """
    if not all(hasattr(w, "send") for w in workers):
        return [w.request(op, timeout_s, **fields) for w in workers]
    asked = [w.send(op, **fields) for w in workers]
    return [w.receive(timeout_s, what) for w, what in zip(workers, asked)]
