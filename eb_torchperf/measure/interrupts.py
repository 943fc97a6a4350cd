"""Interrupts (Ctrl-C, SIGTERM from scancel or a time limit) that cannot lose results.

Python raises KeyboardInterrupt wherever the main thread happens to be.  Inside the
few steps that must finish once started (closing the workers of a pair, diagnosing
and saving the results), a second Ctrl-C would otherwise escape the handler of the
first and the results would never be written.  `held()` blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT for
such a step: signals that arrive meanwhile wait, and when the step ends they are taken
as one interrupt (`held.interrupted`; raised as KeyboardInterrupt when asked).  Signals
that another thread receives (blocking is per thread) are caught by a handler that
only records them, for the same end.
"""

import signal
import threading

#: The signals that stop an audit (SIGTERM: Slurm's scancel and time limit; SIGHUP: a
#: dropped ssh session or closed terminal; SIGQUIT: Ctrl-\, whose default action left
#: an empty results file and the workers running).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def raise_interrupt(signum, frame):
    """A signal handler that turns SIGTERM/SIGHUP/SIGQUIT into KeyboardInterrupt (as
    Ctrl-C)."""
    raise KeyboardInterrupt


class held:
    """Context manager: the STOP_SIGNALS are held (blocked) inside, taken once at the end.

    Args:
        raise_after: raise KeyboardInterrupt on leaving when a signal was held and no
            other exception is leaving the block.

    Attributes:
        interrupted: True after the block when at least one signal arrived inside it.

    Outside the main thread (where signals are never handled) it does nothing.
    """

    def __init__(self, raise_after: bool = True):
        self.raise_after = raise_after
        self.interrupted = False
        self._old_mask = None
        self._handlers = {}
        self._caught = False

    def __enter__(self) -> "held":
        if threading.current_thread() is threading.main_thread():
            self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            # A process-directed signal goes to any thread that does not block it (a
            # progress bar's, a library's pool), and Python then runs the handler in
            # this thread: a recording handler catches those (signals already blocked
            # outside, by a held() around this one, stay for it).
            for signum in set(STOP_SIGNALS) - set(self._old_mask):
                if signal.getsignal(signum) is not None:  # None: set from C, left alone
                    self._handlers[signum] = signal.signal(signum, self._record)
        return self

    def _record(self, signum, frame) -> None:
        self._caught = True

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._old_mask is None:
            return False
        ours = set(STOP_SIGNALS) - set(self._old_mask)
        pending = set(signal.sigpending()) & ours
        for signum in pending:  # consume them: several signals count as one interrupt
            signal.sigtimedwait([signum], 0)
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)
        self._handlers = {}
        signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
        self._old_mask = None
        self.interrupted = bool(pending) or self._caught
        if self.interrupted and self.raise_after and exc_type is None:
            raise KeyboardInterrupt
        return False
