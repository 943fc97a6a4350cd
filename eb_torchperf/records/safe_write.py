"""The one writer of eb_torchperf's output files: results, explain documents, reports,
batch scripts, manifests.

Every file is written to a temporary file in the same folder, flushed to disk
(fsync) and renamed over the final name, so a reader sees the old file or the new
one, never half of one: a full disk, a crash or an interrupt leaves the previous
file as it was and removes the temporary one.  A failure raises WriteError naming
the file.  `claim_new` picks a file name nobody has used (for run names), and
`refuse_protected` keeps a report from being written over its own input.
"""

import contextlib
import errno
import fcntl
import json
import os
import pathlib
import stat
import tempfile
from typing import Dict, Iterable, Optional, Union

from eb_torchperf.errors import ConfigError, WriteError

PathLike = Union[str, os.PathLike]

#: Largest sequence number tried by claim_new before it gives up.
MAX_SEQUENCE = 9999
#: Results names this process claimed with claim_out: path -> the open, locked fd.
_CLAIMS: Dict[str, int] = {}


def _fsync_folder(folder: pathlib.Path) -> None:
    """Make the rename itself durable (best effort: not every file system allows it)."""
    try:
        fd = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or errno.errorcode.get(exc.errno or 0, "I/O error")


def write_bytes(path: PathLike, data: bytes, mode: Optional[int] = None) -> pathlib.Path:
    """Write `data` to `path` atomically (temporary file, fsync, rename).

    Args:
        path: the final file; parent folders are created.
        data: the whole content.
        mode: permission bits of the new file (default: 0o666 less the umask, as open()).

    Returns:
        `path` as a Path.

    Raises:
        WriteError: the folder cannot be created or the file cannot be written (full
            disk, no permission); the previous file at `path`, if any, is unchanged.
    """
    target = pathlib.Path(path)
    try:
        make_folder(target.parent)
    except WriteError as exc:
        raise WriteError("cannot write %s: %s" % (target, exc)) from None
    refuse_special(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".%s." % target.name, suffix=".tmp",
                                   dir=str(target.parent))
    except OSError as exc:
        raise WriteError("cannot write %s: %s" % (target, _why(exc))) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, str(target))
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        kept = " (the previous file is unchanged)" if target.exists() else ""
        raise WriteError("cannot write %s: %s%s" % (target, _why(exc), kept)) from None
    except BaseException:  # an interrupt mid-write: no temporary file left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(target.parent)
    return target


def make_folder(folder: pathlib.Path) -> None:
    """Create `folder` and its parents (existing is fine).

    Raises:
        WriteError: why, naming the part of the path that is not a folder ("f is not
            a folder") instead of mkdir's "File exists".
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()),
                       folder)
        raise WriteError("%s is not a folder" % blocker) from None
    except OSError as exc:
        raise WriteError(_why(exc)) from None


def refuse_special(path: PathLike) -> None:
    """Refuse to write over anything but a regular file (a missing name is fine).

    A rename over a device node, FIFO or socket (`--out /dev/null` as root) or over a
    link to one would replace it by a file; a folder cannot be replaced at all.

    Raises:
        WriteError: `path` (followed through links) is a folder, device, FIFO or socket.
    """
    try:
        mode = os.stat(str(path)).st_mode
    except OSError:
        return  # missing, or a link to nothing (claim_out refuses that for results)
    if stat.S_ISDIR(mode):
        raise WriteError("cannot write %s: it is a folder" % path)
    if not stat.S_ISREG(mode):
        raise WriteError("cannot write %s: it is not a regular file (a device, FIFO or "
                         "socket); give the name of a file" % path)


def write_text(path: PathLike, text: str, mode: Optional[int] = None) -> pathlib.Path:
    """`write_bytes` of `text` encoded as UTF-8.

    Bytes that were not UTF-8 where they came from (an environment variable such as
    LD_LIBRARY_PATH=/opt/caf\\xe9/lib reaches Python as a lone surrogate) are written
    as the text `\\xe9`, so the file stays valid UTF-8 and the value readable.
    """
    data = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return write_bytes(path, data.encode("utf-8"), mode)


def write_json(path: PathLike, data) -> pathlib.Path:
    """`write_text` of `data` as indented JSON (one trailing newline)."""
    return write_text(path, json.dumps(data, indent=1, default=str) + "\n")


def claim_new(folder: PathLike, stem: str, suffix: str,
              siblings: Iterable[str] = ()) -> pathlib.Path:
    """Create an empty file `folder/stem<suffix>` that did not exist before, adding
    "-2", "-3", ... to the stem until the name is free.

    The file is created with O_EXCL, so two processes started in the same second get
    two names.  A name is also skipped while any `stem + sibling` suffix exists
    (reports written next to the results share its stem).

    Returns:
        the path created (empty; write it with write_text, which replaces it).

    Raises:
        WriteError: the folder cannot be created or written.
    """
    base = pathlib.Path(folder)
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError("cannot write into %s: %s" % (base, _why(exc))) from None
    for number in range(1, MAX_SEQUENCE + 1):
        name = stem if number == 1 else "%s-%d" % (stem, number)
        if any((base / (name + other)).exists() for other in siblings):
            continue
        path = base / (name + suffix)
        try:
            os.close(os.open(str(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        except OSError as exc:
            raise WriteError("cannot write %s: %s" % (path, _why(exc))) from None
        return path
    raise WriteError("cannot find a free name %s-N%s in %s" % (stem, suffix, base))


def same_file(one: PathLike, other: PathLike) -> bool:
    """Whether two paths name one file (links included), also when `one` does not exist
    yet but resolves to `other`."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return os.path.realpath(one) == os.path.realpath(other)


def refuse_protected(path: PathLike, protected: Iterable[PathLike], what: str) -> None:
    """Raise ConfigError when writing `path` would replace one of `protected`.

    Args:
        path: the file about to be written.
        protected: inputs and results that must never be overwritten.
        what: how the message names `path` ("the md report", "--markdown").
    """
    for other in protected:
        if same_file(path, other):
            raise ConfigError("%s %s would overwrite %s; choose another name"
                              % (what, path, other))


def claim_out(path: PathLike) -> bool:
    """Reserve an explicit results name for this process until `release_out`.

    A missing name is created empty (O_EXCL) and locked (flock), so a second audit
    given the same name is refused instead of one run being lost.  An existing empty
    file that nobody holds (a name `claim_new` made, or the claim of a run that was
    killed) is taken over.  Claiming a name twice in one process is a no-op.

    Returns:
        True when this call created the file (release_out then removes it if empty).

    Raises:
        WriteError: the name holds results already (results are never replaced),
            another process holds it, it is a symbolic link, a folder, a device, a
            FIFO or a socket, or its folder cannot be written.
    """
    target = pathlib.Path(path)
    if str(target) in _CLAIMS:
        return False
    refuse_special(target)
    if target.is_symlink():
        # a link to nothing would create its target; a link to a file would be replaced
        # by the rename, leaving the file it names untouched
        raise WriteError("cannot write %s: it is a symbolic link (to %s); give the file's "
                         "own name" % (target, os.readlink(str(target))))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        created, fd = True, os.open(str(target), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
    except FileExistsError:
        created, fd = False, _open_existing(target)
    except OSError as exc:
        raise WriteError("cannot write %s: %s" % (target, _why(exc))) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise WriteError("cannot write %s: another audit is writing it; choose another "
                         "name" % target) from None
    _CLAIMS[str(target)] = fd
    return created


def _open_existing(target: pathlib.Path) -> int:
    """An fd of the existing empty file `target` (claim_out); refuses one with data."""
    try:
        if target.stat().st_size > 0:
            raise WriteError("cannot write %s: it exists (results are never replaced); "
                             "remove it or choose another name" % target)
        return os.open(str(target), os.O_RDONLY)
    except OSError as exc:
        raise WriteError("cannot write %s: %s" % (target, _why(exc))) from None


def release_out(path: PathLike, created: bool) -> None:
    """Give up a claim_out claim; the file is removed when `created` and still empty
    (a run that saved nothing leaves no empty results file behind)."""
    fd = _CLAIMS.pop(str(pathlib.Path(path)), None)
    if fd is None:
        return
    os.close(fd)
    with contextlib.suppress(OSError):
        if created and os.path.getsize(str(path)) == 0:
            os.unlink(str(path))
