"""How the lint sandbox is built: which mechanism works here, and its command line.

See lint/sandbox.py for what the sandbox guarantees; this module only knows how to ask
bubblewrap (`bwrap`), util-linux `unshare`, or nothing at all for it.  Tried once per
process: `mechanism()`.
"""

import functools
import os
import shutil
import subprocess
import sys
from typing import List, Optional, Sequence

#: Bytes the sandbox's /tmp (memory) may hold: EasyBuild's logs, the parse's HOME.
TMP_BYTES = 256 * 2 ** 20
_NAMESPACES = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session"]


def _works(argv: List[str]) -> bool:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30, cwd="/").returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=None)
def mechanism() -> str:
    """"bwrap", "unshare" or "plain": the strongest sandbox that works here (see the
    module docstring); tried once per process."""
    true = shutil.which("true") or "/bin/true"
    bwrap = shutil.which("bwrap")
    if bwrap and _works([bwrap, "--ro-bind", "/", "/", *_user_flags(False), *_NAMESPACES,
                         "--proc", "/proc", "--dev", "/dev", *_tmp(), "/tmp", true]):
        return "bwrap"
    unshare = shutil.which("unshare")
    if unshare and _works([unshare, *_unshare_flags(), true]):
        return "unshare"
    return "plain"


def _tmp() -> List[str]:
    return ["--size", str(TMP_BYTES), "--perms", "1777", "--tmpfs"]


def _user_flags(allow_root: bool) -> List[str]:
    """bwrap's user flags: root keeps CAP_SETUID/SETGID only to become `nobody` at once;
    `allow_root`: root in a user namespace without capabilities."""
    if os.geteuid() != 0:
        return ["--unshare-user", "--cap-drop", "ALL"]
    if allow_root:
        return ["--unshare-user", "--uid", "0", "--gid", "0", "--cap-drop", "ALL"]
    return ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]


def _unshare_flags() -> List[str]:
    user = [] if os.geteuid() == 0 else ["--user", "--map-user=%d" % os.getuid(),
                                         "--map-group=%d" % os.getgid()]
    return [*user, "--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc",
            "--uts"]


def _ancestors(path: str) -> List[str]:
    parts, folder = [], os.path.dirname(path)
    while folder not in ("/", ""):
        parts.append(folder)
        folder = os.path.dirname(folder)
    return parts


def bwrap_view(trees: Sequence[str], hide_private: bool) -> List[str]:
    """bwrap arguments for a read-only root with a private /tmp and `trees` bound
    read-only at their own paths; with `hide_private`, every folder above a tree that
    others cannot enter becomes an empty one holding only the trees (root parsing as
    `nobody`).  Mounts are ordered parents first."""
    trees = sorted({os.path.abspath(t) for t in trees if os.path.exists(t)}
                   - {"/", "/tmp", "/proc", "/dev"})  # the sandbox's own
    mounts = {("/tmp", "0tmp")}
    for tree in trees:
        mounts.add((tree, "1bind"))
        for folder in _ancestors(tree) if hide_private else ():
            if not os.stat(folder).st_mode & 0o001:
                mounts.add((folder, "0tmpfs"))
    mounts |= {(folder, "0dir") for tree in trees for folder in _ancestors(tree)
               if _in_tmpfs(folder, mounts)}
    args = ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    for path, kind in sorted(mounts, key=lambda m: (m[0].count("/"), m[1], m[0])):
        args += {"0tmp": [*_tmp(), path], "0tmpfs": ["--size", "1", "--tmpfs", path],
                 "0dir": ["--perms", "0755", "--dir", path],
                 "1bind": ["--ro-bind", path, path]}[kind]
    return args


def _in_tmpfs(folder: str, mounts: set) -> bool:
    """True when the deepest mount above `folder` (not at it) is a tmpfs: bwrap must make
    the folder there, world-enterable."""
    if {(folder, "0tmpfs"), (folder, "0tmp"), (folder, "1bind")} & mounts:
        return False
    for above in _ancestors(folder + "/x")[1:] + ["/"]:
        for kind in ("0tmp", "0tmpfs", "1bind"):
            if (above, kind) in mounts:
                return kind != "1bind"
    return False


def trees(workdir: str, robot_paths: Sequence[str]) -> List[str]:
    """What the parse reads: the interpreter, its import path, robot paths, the copies."""
    from eb_torchperf.lint.collection import find_collection
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(sys.executable), workdir, *robot_paths, *sys.path,
             find_collection() or "", *package_roots()]
    return [p for path in paths if path and os.path.isabs(path)
            for p in (path, os.path.realpath(path))]


def package_roots() -> List[str]:
    """The folders eb_torchperf and EasyBuild are imported from, also where no sys.path
    entry names them (an editable install's import hook: a clone under /tmp, which the
    sandbox's private /tmp would hide)."""
    import importlib.util
    roots = []
    for name in ("eb_torchperf", "easybuild"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            roots.append(os.path.dirname(os.path.abspath(location)))
    return roots


def import_roots() -> List[str]:
    """Where this interpreter imports eb_torchperf and EasyBuild from: what the user
    the parse drops to must be able to read."""
    import importlib.util
    roots = [sys.prefix]
    for name in ("eb_torchperf", "easybuild.framework", "easybuild.easyblocks"):
        try:
            spec = importlib.util.find_spec(name)
        except ImportError:  # its parent package is missing: nothing to read there
            spec = None
        roots += [os.path.dirname(os.path.dirname(p)) for p in
                  (spec.submodule_search_locations or []) if spec] if spec else []
    return sorted(set(roots))


def _user_processes(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        try:
            count += entry.isdigit() and os.stat("/proc/" + entry).st_uid == uid
        except OSError:
            continue
    return count


def max_processes(tier: str, user, allow_root: bool, max_count: int) -> Optional[int]:
    """RLIMIT_NPROC for the parse: counted in the sandbox's own user namespace when it
    has one, else on top of the user's processes now; None for root (not enforced)."""
    own_namespace = os.geteuid() != 0 or (tier == "bwrap" and allow_root)
    if tier in ("bwrap", "unshare") and own_namespace:
        return max_count
    uid = user.pw_uid if user is not None else os.getuid()
    return None if uid == 0 else max_count + _user_processes(uid)


def command(tier: str, user, allow_root: bool, trees: Sequence[str]) -> List[str]:
    if tier == "bwrap":
        return [shutil.which("bwrap"), *_user_flags(allow_root), *_NAMESPACES,
                *bwrap_view(trees, hide_private=user is not None), "--chdir", "/"]
    if tier == "unshare":
        return [shutil.which("unshare"), *_unshare_flags()]
    return []
