"""Make glibc malloc reuse freed memory in a benchmark worker (both sides alike).

Why (issue 16, measured on the 2-core AMD EPYC dev VM): glibc serves a large request
either from memory its heap kept (no page faults) or from a fresh mmap, which the kernel
faults in page by page on first touch -- and which of the two happens depends on the
process's allocation history (the dynamic mmap threshold and heap trimming, see
`man 3 mallopt`).  So two fresh processes of one build ran the same row at steadily
different speeds: conv3x3 4.7 ms in one process and 8-9 ms in the next, GELU on
4096 x 3072 fp32 11 ms and 20-24 ms; a lone GELU call took 12 289 minor page faults
(its 48 MiB output, 4 KiB pages) and 20 ms, of which 4.4 ms were the kernel once the
faults were gone.  In a VM those faults are also the noisiest work there is.

The fix sets two malloc parameters in the worker before torch is imported, the same in
target and reference: M_MMAP_MAX = 0 (every allocation comes from the heap) and
M_TRIM_THRESHOLD = 2 GiB - 1 (freed memory is kept for the next call).  A row then
measures the build's kernels, not the allocator's luck.  Left alone, and said so in the
facts, when the environment sets glibc malloc tunables itself (GLIBC_TUNABLES with a
malloc entry, or a MALLOC_* variable such as MALLOC_ARENA_MAX: a site's own choice is
part of what is audited),
when EBTP_KEEP_MALLOC=1 asks for it, or when the C library has no mallopt (musl).  An
allocator preloaded in place of glibc's (jemalloc, tcmalloc) is not affected: mallopt
only configures glibc's own.
"""

import ctypes
import os

#: mallopt parameter numbers from glibc's <malloc.h>.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
#: The largest trim threshold mallopt takes (an int).
TRIM_THRESHOLD = 2 ** 31 - 1
#: Set to 1 to leave glibc malloc as the environment configures it.
KEEP_VAR = "EBTP_KEEP_MALLOC"

_STATE = {"applied": False, "reason": "not configured yet"}


def environment_sets_malloc(environ):
    """The variable through which the environment tunes glibc malloc itself, or None."""
    if "malloc" in environ.get("GLIBC_TUNABLES", ""):
        return "GLIBC_TUNABLES"
    for name in sorted(environ):
        if name.startswith("MALLOC_"):
            return name
    return None


def configure(environ=None, libc=None):
    """Apply the worker's malloc parameters (see the module docstring); idempotent.

    Args:
        environ: the worker's environment (default os.environ).
        libc: a ctypes library with `mallopt` (default: the process's C library).

    Returns:
        {"applied": bool, "reason": str, ...}: also what `collect` reports.
    """
    environ = os.environ if environ is None else environ
    if environ.get(KEEP_VAR, "") not in ("", "0"):
        return _record(False, "%s is set" % KEEP_VAR)
    own = environment_sets_malloc(environ)
    if own:
        return _record(False, "the environment tunes glibc malloc (%s)" % own)
    try:
        lib = libc if libc is not None else ctypes.CDLL(None)
        mallopt = lib.mallopt
    except (OSError, AttributeError):
        return _record(False, "the C library has no mallopt")
    ok = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if not ok:
        return _record(False, "mallopt refused the parameters")
    return _record(True, "heap reuse: M_MMAP_MAX=0, M_TRIM_THRESHOLD=%d" % TRIM_THRESHOLD)


def _record(applied, reason):
    _STATE.clear()
    _STATE.update(applied=applied, reason=reason)
    return dict(_STATE)


def collect(torch=None):
    """The facts collector: what configure() did in this worker."""
    return dict(_STATE)
