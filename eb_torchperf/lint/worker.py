"""The parser inside the lint sandbox: EasyBuild configured once, one forked child per file.

Started by lint/sandbox.py as `python -I -c BOOT SYS_PATH FD REQUEST` inside the sandbox.
It reads the request (a JSON file: mode, files, arch, robot paths, limits), drops to the
unprivileged user the request names (root), configures
EasyBuild once, then for each file forks a child that:

- closes every descriptor but its own result pipe (stdin/out/err go to /dev/null), so
  the easyconfig's code cannot reach the channel to lint/sandbox.py nor another file's
  result;
- gets a fresh HOME/TMPDIR, limits on CPU seconds, file size, address space
  (RLIMIT_AS and RLIMIT_DATA) and processes (RLIMIT_NPROC);
- parses the file and sends back data about it (mode "lint": the facts; "raw": the
  parameters asked for, for `sources`), never a verdict: the findings are computed
  outside the sandbox.

This process is not dumpable (no same-user process can read its memory or descriptors
through /proc or ptrace) and is the subreaper of everything a child starts: after each
file every process left (a double fork, `setsid`) is killed before the next file
starts.  One JSON line per file goes to the channel descriptor:
{"index": i, "facts"|"config"|"problem": ...}; {"setup": line} when it cannot start.
"""

import ctypes
import json
import logging
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback

_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
#: Largest reply a child may send, bytes.
MAX_REPLY_BYTES = 8 * 2 ** 20


def _prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _send(fd: int, message: dict) -> None:
    data = (json.dumps(message, default=str) + "\n").encode("utf-8", "replace")
    while data:
        data = data[os.write(fd, data):]


def _drop(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.geteuid() == 0 or os.getuid() == 0:  # pragma: no cover - setuid cannot fail open
        raise OSError("could not drop root privileges")


def unreadable(paths) -> str:
    """The first of `paths` (what the parent's interpreter imports from) or of the
    standard library's modules this process cannot read, "" when it can read them all."""
    stdlib = os.path.dirname(os.__file__)
    for path in [stdlib, *paths]:
        if not os.access(path, os.R_OK | (os.X_OK if os.path.isdir(path) else 0)):
            return path
    for name in sorted(os.listdir(stdlib)):
        if name.endswith(".py") and not os.access(os.path.join(stdlib, name), os.R_OK):
            return os.path.join(stdlib, name)
    return ""


def _limit(name: str, value: int) -> None:
    kind = getattr(resource, name)
    hard = resource.getrlimit(kind)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))


def _limits(request: dict) -> None:
    """The child's limits (see the module docstring)."""
    memory = request["memory_mib"] * 2 ** 20
    _limit("RLIMIT_CPU", int(min(request["timeout_s"], 10 ** 6)) + 5)
    _limit("RLIMIT_FSIZE", request["max_file_bytes"])
    _limit("RLIMIT_AS", memory)
    _limit("RLIMIT_DATA", memory)
    if request.get("max_processes"):
        _limit("RLIMIT_NPROC", request["max_processes"])


def _isolate(write_fd: int, home: str) -> None:
    """In the child, before any easyconfig code: only `write_fd` stays open; `home` (a
    fresh folder) is its HOME, TMPDIR and working directory."""
    logging.disable(logging.CRITICAL)  # EasyBuild's log file is closed below
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sorted({0, 1, 2, write_fd})
    for low, high in zip(keep, keep[1:] + [resource.getrlimit(resource.RLIMIT_NOFILE)[0]]):
        os.closerange(low + 1, high)
    os.chdir(home)
    os.environ.update(HOME=home, TMPDIR=home, XDG_CACHE_HOME=home, XDG_CONFIG_HOME=home)
    tempfile.tempdir = home


def _parse(request: dict, path: str) -> dict:
    """The child's reply for one file (runs the easyconfig's code)."""
    if request["mode"] == "raw":
        return _raw(path, request["parameters"])
    from eb_torchperf.lint import parse, resolve
    from eb_torchperf.lint.facts_json import facts_to_json
    try:
        facts = parse.parse_path(path, request["arch"], request["check_dependencies"],
                                 resolve.Resolver())
    except parse.EasyconfigError as err:
        if _out_of_memory(err):
            raise MemoryError() from None
        return {"problem": err.reason}
    return {"facts": facts_to_json(facts)}


def _raw(path: str, parameters) -> dict:
    """{"config": the `parameters` as EasyBuild's parser reads them (constants resolved,
    templates not)} or {"problem": one line}."""
    try:
        from easybuild.framework.easyconfig.parser import EasyConfigParser
        from easybuild.tools.build_log import EasyBuildError
    except ImportError:
        return {"problem": "this needs easybuild-framework in this Python (pip install "
                           "'eb_torchperf[easybuild]')"}
    try:
        config = EasyConfigParser(path).get_config_dict()
    except EasyBuildError as exc:
        return {"problem": "cannot parse %s: %s" % (path, exc.msg)}
    except (UnicodeDecodeError, SyntaxError, ValueError) as exc:  # binary, latin-1, not Python
        return {"problem": "cannot parse %s: not a readable easyconfig (%s)"
                           % (path, type(exc).__name__)}
    return {"config": {key: config.get(key) for key in parameters}}


def _out_of_memory(error: BaseException) -> bool:
    """True when a MemoryError is among the exceptions that led to `error` (EasyBuild
    turns the easyconfig's exceptions into its own)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, MemoryError):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def _child(request: dict, path: str, write_fd: int,
           home: str) -> None:  # pragma: no cover - forked
    try:
        _isolate(write_fd, home)
        _limits(request)
        reply = _parse(request, path)
    except MemoryError:
        reply = {"problem": "cannot parse: exceeded the memory limit (%d MiB)"
                 % request["memory_mib"]}
    except BaseException as exc:  # noqa: BLE001 - everything becomes the file's problem
        reply = {"problem": "cannot parse: %s: %s" % (type(exc).__name__, exc)}
    try:
        _send(write_fd, reply)
    finally:
        os._exit(0)


def _read(fd: int, timeout_s: float):
    """The child's reply bytes; None when the deadline passed; b"" when it sent nothing."""
    deadline, chunks, size = time.monotonic() + timeout_s, [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        size += len(chunk)
        if not chunk or size > MAX_REPLY_BYTES:
            return b"".join(chunks)[:MAX_REPLY_BYTES]
        chunks.append(chunk)


def kill_descendants() -> int:
    """SIGKILL every child of this process (orphans of a double fork come here: this
    process is their subreaper) until none is left; returns how many were killed."""
    killed, me = 0, str(os.getpid())
    while True:
        children = []
        for entry in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % entry, "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1].decode() == me:
                children.append(int(entry))
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reaped = _reap()
        killed += len(children)
        if not children and not reaped:
            return killed


def _reap() -> int:
    count = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return count
        if pid == 0:
            return count
        count += 1


def _one(request: dict, path: str) -> dict:
    """Fork, parse `path` in the child, wait for its reply; kill everything it left."""
    home = tempfile.mkdtemp(prefix="eb-torchperf-home-")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child exits in _child
        os.close(read_fd)
        _child(request, path, write_fd, home)
    os.close(write_fd)
    try:
        data = _read(read_fd, request["timeout_s"])
    finally:
        os.close(read_fd)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        kill_descendants()
        shutil.rmtree(home, ignore_errors=True)
    return _reply(data, status, request)


def _reply(data, status: int, request: dict) -> dict:
    if data is None:
        return {"problem": "parsing took longer than %g s; the parser was killed"
                % request["timeout_s"]}
    if data:
        try:
            reply = json.loads(data.decode("utf-8", "replace"))
        except ValueError as exc:
            return {"problem": "the parser gave an unreadable result (%s)" % exc}
        return reply if isinstance(reply, dict) else {"problem": "the parser gave no object"}
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        return {"problem": "parsing used more than its CPU time limit; the parser was killed"}
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) != signal.SIGKILL:
        return {"problem": "the parser died (%s)" % signal.Signals(os.WTERMSIG(status)).name}
    return {"problem": "the parser exited without a result"}


def _start(request: dict) -> str:
    """Drop privileges, check what must be readable, configure EasyBuild: "" or a
    one-line reason this worker cannot parse anything."""
    if request.get("drop"):
        _drop(*request["drop"])
        private = unreadable(request["readable"])
        if private:
            return ("the user %s cannot read %s (%s)"
                    % (request["drop_name"], private, request["drop_hint"]))
    if request["mode"] == "lint":
        from eb_torchperf.errors import ConfigError
        from eb_torchperf.lint import ebsetup
        try:
            ebsetup.ensure_configured(request["robot_paths"])
        except ConfigError as err:
            return str(err)
        warm_up()
    return ""


def warm_up() -> int:
    """Import EasyBuild's tools, framework, toolchains and easyblocks once, here: every
    forked child then finds them in memory instead of importing them again (about a
    second per file).  Installed code only, no easyconfig.  Returns the modules imported."""
    import contextlib
    import importlib
    import io
    import pkgutil
    count, quiet = 0, io.StringIO()  # deprecated modules print warnings when imported
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        for package in ("easybuild.tools", "easybuild.framework", "easybuild.toolchains",
                        "easybuild.easyblocks"):
            try:
                module = importlib.import_module(package)
            except ImportError:
                continue
            for info in pkgutil.walk_packages(module.__path__, package + ".",
                                              onerror=lambda name: None):
                try:
                    importlib.import_module(info.name)
                    count += 1
                except Exception:  # noqa: BLE001 - an optional module: the child says
                    continue
    return count


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def main(channel: int, request_path: str) -> None:
    """The worker's entry point (see the module docstring)."""
    with open(request_path, encoding="utf-8") as handle:
        request = json.load(handle)
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    try:
        problem = _start(request)
    except Exception as exc:  # noqa: BLE001 - said on the channel, in one line
        traceback.print_exc()  # to the sandbox's error file, for whoever debugs it
        problem = "%s: %s" % (type(exc).__name__, exc)
    if problem:
        _send(channel, {"setup": problem})
        return
    _send(channel, {"ready": True})
    scratch = tempfile.gettempdir()
    keep = set(os.listdir(scratch))
    for index, path in enumerate(request["files"]):
        _send(channel, dict(_one(request, path), index=index))
        if request.get("private_tmp"):  # what the file left in the sandbox's own /tmp
            for entry in set(os.listdir(scratch)) - keep:
                _remove(os.path.join(scratch, entry))
    kill_descendants()
