"""Processes of the probe die with the process that started them.

A worker, a zygote, a worker forked from a zygote and a collective peer each run in
a session of their own (so a terminal's Ctrl-C reaches only eb-torchperf); when the
runner is killed outright (SIGKILL, the OOM killer), nothing would stop them.  On
Linux the kernel sends the signal set by prctl(PR_SET_PDEATHSIG) when the parent
exits; elsewhere this does nothing (a worker still ends at the end of its requests).
Standard library only.
"""

import os
import signal
import sys

#: linux/prctl.h
PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel for `sig` when the parent process exits; exit at once when it is
    gone already (reparented before the request).  True when the request was made."""
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError, ImportError):
        return False
    if os.getppid() != parent:  # the parent died before the request
        os._exit(0)
    return True
