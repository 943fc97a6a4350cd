"""Parse untrusted easyconfigs in a sandbox: EasyBuild configured once per sandbox, each
file in its own forked, limited child (lint/worker.py); what comes back is data about the
file, never a verdict.

An easyconfig is Python, and EasyBuild's parser executes it: linting a pull request's
easyconfig runs the pull request's code.  The sandbox is the best this machine offers,
tried in this order (`mechanism()`):

1. "bwrap" (bubblewrap, Debian package `bubblewrap`): the whole file system read-only,
   a private /tmp of confine.TMP_BYTES in memory, no network (`--unshare-net`), own pid, IPC and UTS namespaces (every
   process the parse started dies with the sandbox), `--die-with-parent`,
   `--new-session`.  An ordinary user runs it in a user namespace with no capabilities.
   Root (unless `allow_root`) parses as the user `nobody`: folders on the way to the
   interpreter, its libraries, the robot paths and the copies of the files that `nobody`
   cannot enter (/root, a 0700 checkout) are replaced by empty ones with only those trees
   bound in, so a Python under /root works and root's other files stay unreadable.
   `allow_root`: as root in a user namespace, without capabilities.
2. "unshare" (util-linux, when user namespaces work but bubblewrap is missing): own pid,
   network, IPC and UTS namespaces; the file system is not read-only, root parses as
   `nobody` when `nobody` can read the interpreter (else one line says what to do).
3. "plain": a child process only; root parses as `nobody` as in 2.

In every case: the files are parsed from copies, with only KEPT_VARIABLES of the
environment; the worker's memory and descriptors are out of the child's reach (not
dumpable); each file's child has limits on CPU seconds, memory (MEMORY_LIMIT_MIB), processes (MAX_PROCESSES) and file size, a wall-clock
deadline, no descriptor but its own result pipe, and everything it started is killed
when it ends.  A file that kills its sandbox costs only itself: the rest are parsed in a
fresh one.  The result is the same whoever runs it (root, root with a Python under
/root, an ordinary user), provided that user can read the files and the interpreter.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from typing import List, Optional, Sequence

from eb_torchperf.errors import ConfigError
from eb_torchperf.lint import confine

#: Seconds one file may take (parse, dependency look-ups) before it is killed.
DEFAULT_TIMEOUT_S = 120.0
#: Largest file the parse may write, bytes (RLIMIT_FSIZE).
MAX_FILE_BYTES = 16 * 2 ** 20
#: Address space one parse may use, MiB (RLIMIT_AS, RLIMIT_DATA).
MEMORY_LIMIT_MIB = 4096
#: Processes the parse may run at once (RLIMIT_NPROC, counted in the sandbox's user
#: namespace; as `nobody` without one, on top of those `nobody` already runs).
MAX_PROCESSES = 64
#: Files parsed by one sandbox (EasyBuild is configured once per sandbox).
BATCH_SIZE = 200
#: Sandboxes run side by side: one per CPU this process may use, at most 4.
PARALLEL = max(1, min(4, len(os.sched_getaffinity(0))))
#: Seconds a sandbox may take to start and configure EasyBuild.
STARTUP_S = 120.0
#: The unprivileged user root parses as.
SANDBOX_USER = "nobody"
_DROP_HINT = ("install bubblewrap (apt-get install bubblewrap), lint as an ordinary user, "
              "make it readable by others, or pass --allow-root")
#: The variables the parse sees (with HOME and TMPDIR set to its own folder): what
#: EasyBuild's configuration and the interpreter need, not the caller's secrets (a CI
#: job's tokens).
KEPT_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "XDG_CONFIG_HOME",
                  "XDG_CONFIG_DIRS")
KEPT_PREFIXES = ("LC_", "EASYBUILD_", "EB_TORCHPERF_")
_BOOT = ("import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
         "from eb_torchperf.lint.worker import main; main(int(sys.argv[2]), sys.argv[3])")


def check_timeout(timeout_s: float) -> float:
    """`timeout_s` when it is a finite number of seconds > 0.

    Raises:
        ConfigError: otherwise.
    """
    if not (0 < timeout_s < float("inf")):
        raise ConfigError("--timeout must be a finite number of seconds > 0, not %g" % timeout_s)
    return timeout_s


def private_folder(path: str) -> Optional[str]:
    """The first folder above `path` that other users cannot enter (no o+x), or None."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            if not os.stat(folder).st_mode & 0o001:
                return folder
        except OSError:
            return None
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _drop_user(allow_root: bool):
    """The user root parses as, None when not root or `allow_root`.

    Raises:
        ConfigError: there is no such user.
    """
    if os.geteuid() != 0 or allow_root:
        return None
    try:
        return pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        raise ConfigError("lint as root: there is no user %r to parse easyconfigs as; run "
                          "as another user, or pass --allow-root to execute them as root"
                          % SANDBOX_USER) from None


def _chown(workdir: str, user) -> None:
    """Give the copies to `user` (0600); folders stay enterable (0711) so that root
    without capabilities reads the request before it becomes `user`."""
    if user is None:
        return
    for root, dirs, files in os.walk(workdir):
        os.chmod(root, 0o700 if root.endswith(os.sep + "tmp") else 0o711)
        for name in [root] + [os.path.join(root, n) for n in files]:
            os.chown(name, user.pw_uid, user.pw_gid)


def _copy_inputs(paths: Sequence[str], workdir: str) -> List[object]:
    """A copy of each file under `workdir`, or a {"problem"} reply when it cannot be read
    (the parse must not read the original: it may change, or be unreadable to `nobody`)."""
    copies: List[object] = []
    for index, path in enumerate(paths):
        try:
            with open(path, "rb") as handle:
                content = handle.read()
        except OSError as exc:
            copies.append({"problem": "cannot read: %s" % (exc.strerror or exc)})
            continue
        folder = os.path.join(workdir, "in", str(index))
        os.makedirs(folder)
        copy = os.path.join(folder, os.path.basename(path) or "easyconfig.eb")
        with open(copy, "wb") as handle:
            handle.write(content)
        copies.append(copy)
    return copies


def _swap(value, old: str, new: str):
    """`value` (a JSON reply) with the copy's path `old` replaced by `new` in every text."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_swap(item, old, new) for item in value]
    if isinstance(value, dict):
        return {key: _swap(item, old, new) for key, item in value.items()}
    return value


def parse_files(paths: Sequence[str], mode: str = "lint", arch: str = "x86_64",
                check_dependencies: bool = True, robot_paths: Sequence[str] = (),
                timeout_s: float = DEFAULT_TIMEOUT_S, allow_root: bool = False,
                parameters: Sequence[str] = ()) -> List[dict]:
    """Parse each file in the sandbox (see the module docstring).

    Args:
        paths: easyconfig files.
        mode: "lint" (EasyconfigFacts; EasyBuild configured with `robot_paths`, `arch`,
            `check_dependencies`) or "raw" (`parameters` as EasyBuild's parser reads them).
        timeout_s: wall-clock seconds one file may take before it is killed.
        allow_root: as root, parse as root (in a user namespace without capabilities
            when bubblewrap works) instead of as `nobody`.

    Returns:
        One reply per path, in order: {"facts": JSON of EasyconfigFacts (unchecked)},
        {"config": dict} or {"problem": one line}; paths say the original file.

    Raises:
        ConfigError: bad timeout, no user to parse as, or the sandbox cannot start.
    """
    check_timeout(timeout_s)
    user = _drop_user(allow_root)
    tier = confine.mechanism()
    workdir = tempfile.mkdtemp(prefix="eb-torchperf-lint-")
    try:
        copies = _copy_inputs(paths, workdir)
        os.makedirs(os.path.join(workdir, "tmp"))
        _chown(workdir, user)
        request = _request(tier, user, allow_root, os.path.join(workdir, "tmp"), mode=mode,
                           arch=arch, check_dependencies=check_dependencies,
                           robot_paths=[os.path.abspath(p) for p in robot_paths],
                           timeout_s=timeout_s, parameters=list(parameters))
        command = confine.command(tier, user, allow_root, confine.trees(workdir, robot_paths))
        replies = _parse_all(copies, request, command, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return [_swap(reply, copy, path) if isinstance(copy, str) else copy
            for reply, copy, path in zip(replies, copies, paths)]


def _kept_environ() -> dict:
    return {key: value for key, value in os.environ.items()
            if key in KEPT_VARIABLES or key.startswith(KEPT_PREFIXES)}


def _request(tier: str, user, allow_root: bool, scratch: str, **fields) -> dict:
    """What lint/worker.py reads: `fields` plus limits, the user to become, the
    environment and what that user must be able to read."""
    scratch = "/tmp" if tier == "bwrap" else scratch
    return dict(fields, memory_mib=MEMORY_LIMIT_MIB, max_file_bytes=MAX_FILE_BYTES,
                private_tmp=tier == "bwrap", environ=dict(_kept_environ(), HOME=scratch,
                                                          TMPDIR=scratch),
                max_processes=confine.max_processes(tier, user, allow_root, MAX_PROCESSES),
                drop=[user.pw_uid, user.pw_gid] if user else None, drop_name=SANDBOX_USER,
                drop_hint=_DROP_HINT, readable=confine.import_roots())


def _parse_all(copies: List[object], request: dict, command: List[str],
               workdir: str) -> List[dict]:
    """Replies for every copy: the files shared among up to PARALLEL sandboxes side by
    side, at most BATCH_SIZE per sandbox."""
    from concurrent.futures import ThreadPoolExecutor
    replies: List[Optional[dict]] = [c if isinstance(c, dict) else None for c in copies]
    pending = [i for i, reply in enumerate(replies) if reply is None]
    share = min(BATCH_SIZE, -(-len(pending) // PARALLEL)) or 1
    chunks = [pending[i:i + share] for i in range(0, len(pending), share)]
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        done = pool.map(lambda chunk: _parse_chunk(chunk, copies, request, command, workdir),
                        chunks)
        for chunk, got in zip(chunks, done):
            for index, reply in zip(chunk, got):
                replies[index] = reply
    return replies


def _parse_chunk(chunk: List[int], copies: List[object], request: dict, command: List[str],
                 workdir: str) -> List[dict]:
    """The replies for `chunk` (indices into `copies`): a fresh sandbox after one died."""
    replies: List[dict] = []
    while len(replies) < len(chunk):
        replies += _run_sandbox([copies[i] for i in chunk[len(replies):]], request, command,
                                workdir)
    return replies


def _run_sandbox(files: List[str], request: dict, command: List[str],
                 workdir: str) -> List[dict]:
    """Start one sandboxed worker on `files`; its replies, in order (at least one: a
    file that ended the sandbox gets a problem, the rest are left for the next one).

    Raises:
        ConfigError: the sandbox or EasyBuild could not start (one line).
    """
    handle, path = tempfile.mkstemp(prefix="request-", suffix=".json",
                                    dir=os.path.join(workdir, "in"))
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(dict(request, files=files), out)
    os.chmod(path, 0o644)
    read_fd, write_fd = os.pipe()
    argv = [*command, sys.executable, "-I", "-c", _BOOT,
            json.dumps([os.path.abspath(p) for p in sys.path]), str(write_fd), path]
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=errors,
                                    stderr=errors, pass_fds=(write_fd,), cwd="/",
                                    start_new_session=True, env=request["environ"])
        finally:
            os.close(write_fd)
        try:
            return _collect(_Lines(read_fd), len(files), request["timeout_s"], errors)
        finally:
            os.close(read_fd)
            _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        pass
    proc.wait()


def _collect(lines: "_Lines", count: int, timeout_s: float, errors) -> List[dict]:
    first = lines.next(STARTUP_S)
    if not first or not first.get("ready"):
        errors.seek(0)
        said = [l for l in errors.read().decode("utf-8", "replace").splitlines() if l.strip()]
        reason = (first or {}).get("setup") or (said[-1] if said else "it exited")
        raise ConfigError("the lint sandbox (%s) could not start: %s"
                          % (confine.mechanism(), " ".join(str(reason).split())))
    replies: List[dict] = []
    while len(replies) < count:
        message = lines.next(timeout_s + 30)
        if message is None:
            replies.append({"problem": "the parser ended or stopped its sandbox "
                                       "(parsing it again in a fresh one is not tried)"})
            break
        if message.pop("index", None) != len(replies):
            replies.append({"problem": "the parser gave an unreadable result"})
            break
        replies.append(message)
    return replies


class _Lines:
    """JSON objects, one per line, read from a pipe with a deadline each."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def next(self, timeout_s: float) -> Optional[dict]:
        """The next object; None at the end, after `timeout_s`, or for a bad line."""
        import select
        import time
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            return None
        return message if isinstance(message, dict) else None
