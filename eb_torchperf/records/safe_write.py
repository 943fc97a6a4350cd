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
import json
import os
import pathlib
import tempfile
from typing import Iterable, Optional, Union

from eb_torchperf.errors import ConfigError, WriteError

PathLike = Union[str, os.PathLike]

#: Largest sequence number tried by claim_new before it gives up.
MAX_SEQUENCE = 9999


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
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError("cannot write %s: %s" % (target, _why(exc))) from None
    if target.is_dir():
        raise WriteError("cannot write %s: it is a folder" % target)
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


def write_text(path: PathLike, text: str, mode: Optional[int] = None) -> pathlib.Path:
    """`write_bytes` of `text` encoded as UTF-8."""
    return write_bytes(path, text.encode("utf-8"), mode)


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
