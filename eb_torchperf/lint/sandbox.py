"""Parse and lint one untrusted easyconfig in a separate, time-bounded child process.

An easyconfig is Python, and EasyBuild's parser executes it (`exec` of the file's
text): linting a pull request's easyconfig runs the pull request's code.  Each file is
therefore handled by a forked child, with the least privilege this machine allows:

- a throwaway working directory, HOME and TMPDIR (removed afterwards); the easyconfig
  is parsed from a copy there;
- as root (unless --allow-root): the child drops to the unprivileged user `nobody`
  (setgroups([]), setgid, setuid) before EasyBuild is configured and the file is read,
  so it cannot write root-owned files or read root-only ones, and EasyBuild's
  run-as-root flag is never needed;
- limits: CPU seconds (RLIMIT_CPU), largest file written (RLIMIT_FSIZE), and a wall
  clock deadline after which the child is killed;
- the result comes back as JSON on a pipe, checked field by field (never pickle: the
  child is not trusted).

What it cannot stop: writes to world-writable places (/tmp, /dev/shm) and to files
`nobody` owns, reads of world-readable files, network use (no network namespace is
made; this machine has no network), and anything at all when not run as root or with
--allow-root (then the child has the user's own rights).  One file failing (a syntax
error, a binary or latin-1 file, a crash, a hang) gives that file a one-line problem;
the others are still linted.
"""

import json
import os
import pwd
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import Optional, Sequence

from eb_torchperf.records import validate
from eb_torchperf.errors import ConfigError, SchemaError
from eb_torchperf.records.findings import Finding

#: Seconds one file may take (parse, dependency look-ups, rules) before it is killed.
DEFAULT_TIMEOUT_S = 120.0
#: Largest file the child may write, bytes (RLIMIT_FSIZE).
MAX_FILE_BYTES = 16 * 2 ** 20
#: The unprivileged user a root process parses as.
SANDBOX_USER = "nobody"

_RESULT = validate.Obj(optional={"problem": validate.Opt(validate.Str()),
                                 "findings": validate.ListOf(validate.FINDING)})


#: Standard-library modules EasyBuild imports inside functions: imported before the
#: privilege drop, since the interpreter's own files may be unreadable to `nobody`
#: (a Python under /root, as on the dev machine).
PRELOAD_STDLIB = ("xml.etree.ElementTree", "xml.dom.minidom", "csv", "difflib", "glob",
                  "hashlib", "http.client", "urllib.request", "urllib.parse", "email.utils",
                  "tarfile", "zipfile", "shlex", "subprocess", "platform", "locale",
                  "gettext", "getpass", "inspect", "ast", "tokenize", "copy", "pprint",
                  "string", "textwrap", "uuid", "fcntl", "termios", "encodings.latin_1",
                  "encodings.ascii", "encodings.utf_8", "encodings.idna", "unicodedata",
                  "distutils.version", "packaging.version", "importlib.metadata",
                  "importlib.util", "logging.handlers", "multiprocessing", "queue")


def preload() -> int:
    """Import EasyBuild's framework, tools, toolchains and easyblocks and PRELOAD_STDLIB
    now, in the privileged parent: a forked child that dropped to `nobody` finds them
    in memory.  Returns the number of modules imported (~1 s, once per lint run)."""
    import contextlib
    import importlib
    import io
    import pkgutil
    count = 0
    names = list(PRELOAD_STDLIB)
    quiet = io.StringIO()  # deprecated modules (py2vs3) print warnings when imported
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        for package in ("easybuild.tools", "easybuild.framework", "easybuild.toolchains",
                        "easybuild.easyblocks"):
            try:
                module = importlib.import_module(package)
            except ImportError:
                continue
            names += [info.name for info in pkgutil.walk_packages(
                module.__path__, package + ".", onerror=lambda name: None)]
        for name in names:
            try:
                importlib.import_module(name)
                count += 1
            except Exception:  # noqa: BLE001 - an optional module; the child reports its own
                continue
    return count


def _sandbox_user() -> Optional[pwd.struct_passwd]:
    try:
        return pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        return None


def _drop_privileges(user: pwd.struct_passwd) -> None:
    os.setgroups([])
    os.setgid(user.pw_gid)
    os.setuid(user.pw_uid)
    if os.geteuid() == 0 or os.getuid() == 0:  # pragma: no cover - setuid cannot fail open
        raise OSError("could not drop root privileges")


def private_folder(path: str) -> Optional[str]:
    """The first folder above `path` that other users cannot enter (no o+x), or None.

    Root parses as `nobody`, which then cannot read a robot path or included file under
    such a folder (a `mktemp -d` checkout is 0700): EasyBuild's own message ("robot path
    ... is not a directory") does not say why, so the problem line gets this hint.
    """
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


def _child(path: str, copy: str, workdir: str, lint, user, timeout_s: float, read_fd: int,
           write_fd: int) -> None:
    """In the forked child: isolate, then lint `copy`; the JSON result to `write_fd`."""
    os.close(read_fd)
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR=workdir, XDG_CACHE_HOME=workdir)
        tempfile.tempdir = workdir
        cpu = int(min(timeout_s, 10 ** 6)) + 5
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_FILE_BYTES, MAX_FILE_BYTES))
        if user is not None:
            _drop_privileges(user)
        reply = lint(copy)
    except BaseException as exc:  # noqa: BLE001 - everything becomes the file's problem
        reply = {"problem": "cannot parse: %s: %s" % (type(exc).__name__, exc)}
    text = json.dumps(reply, default=str).replace(copy, path)
    with os.fdopen(write_fd, "w") as out:
        out.write(text)
    os._exit(0)


def _read_all(fd: int, pid: int, timeout_s: float) -> Optional[bytes]:
    """The child's whole reply, or None when the deadline passed (child killed)."""
    deadline = time.monotonic() + timeout_s
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def run_isolated(path: str, lint, timeout_s: float = DEFAULT_TIMEOUT_S,
                 allow_root: bool = False) -> dict:
    """Lint one file in a forked, isolated child (see the module docstring).

    Args:
        path: the easyconfig as given.
        lint: callable(copy_path) -> {"findings": [Finding JSON...]} or {"problem": str};
            runs in the child (EasyBuild configured there).
        timeout_s: wall-clock seconds before the child is killed.
        allow_root: as root, parse as root (no privilege drop).

    Returns:
        {"findings": tuple of Finding} or {"problem": one line}.
    """
    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except OSError as exc:
        return {"problem": "cannot read: %s" % (exc.strerror or exc)}
    user = None
    if os.geteuid() == 0 and not allow_root:
        user = _sandbox_user()
        if user is None:
            raise ConfigError("lint as root: there is no user %r to parse easyconfigs as; "
                              "run as another user, or pass --allow-root to execute them as "
                              "root" % SANDBOX_USER)
    workdir = tempfile.mkdtemp(prefix="eb-torchperf-lint-")
    try:
        copy = os.path.join(workdir, os.path.basename(path) or "easyconfig.eb")
        with open(copy, "wb") as handle:
            handle.write(content)
        if user is not None:
            for item in (workdir, copy):
                os.chown(item, user.pw_uid, user.pw_gid)
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child exits in _child
            _child(path, copy, workdir, lint, user, timeout_s, read_fd, write_fd)
        os.close(write_fd)
        try:
            data = _read_all(read_fd, pid, timeout_s)
        finally:
            os.close(read_fd)
            _, status = os.waitpid(pid, 0)
        reply = _reply(data, status, timeout_s)
        private = private_folder(path) if user is not None else None
        if private and private in reply.get("problem", ""):  # a path under it failed
            reply["problem"] += (" (easyconfigs are parsed as the user %r, who cannot enter "
                                 "%s: make it o+x, or pass --allow-root)" % (SANDBOX_USER, private))
        return reply
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _reply(data: Optional[bytes], status: int, timeout_s: float) -> dict:
    if data is None:
        return {"problem": "parsing took longer than %g s; the parser was killed" % timeout_s}
    if not data:
        if os.WIFSIGNALED(status):
            return {"problem": "the parser died (%s)" % signal.Signals(os.WTERMSIG(status)).name}
        return {"problem": "the parser exited with status %d without a result"
                % os.WEXITSTATUS(status)}
    try:
        reply = json.loads(data.decode("utf-8", "replace"))
        validate.check(reply, _RESULT, "lint reply")
    except (ValueError, SchemaError) as exc:
        return {"problem": "the parser gave an unreadable result (%s)" % exc}
    if reply.get("problem"):
        return {"problem": " ".join(str(reply["problem"]).split())}
    return {"findings": tuple(Finding.from_json(f) for f in reply.get("findings", ()))}


def check_timeout(timeout_s: float) -> float:
    """`timeout_s` when it is a finite number of seconds > 0.

    Raises:
        ConfigError: otherwise.
    """
    if not (0 < timeout_s < float("inf")):
        raise ConfigError("--timeout must be a finite number of seconds > 0, not %g" % timeout_s)
    return timeout_s


def lint_files(paths: Sequence[str], lint, timeout_s: float, allow_root: bool) -> list:
    """run_isolated for each path, in order."""
    return [run_isolated(path, lint, timeout_s, allow_root) for path in paths]
