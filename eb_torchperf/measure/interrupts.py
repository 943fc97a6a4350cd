"""Interrupts (Ctrl-C, SIGTERM from scancel or a time limit) that cannot lose results.

Python raises KeyboardInterrupt wherever the main thread happens to be.  Inside the
few steps that must finish once started (closing the workers of a pair, diagnosing
and saving the results), a second Ctrl-C would otherwise escape the handler of the
first and the results would never be written.  `held()` blocks SIGINT, SIGTERM and SIGHUP for
such a step: signals that arrive meanwhile wait, and when the step ends they are taken
as one interrupt (`held.interrupted`; raised as KeyboardInterrupt when asked).
"""

import signal
import threading

#: The signals that stop an audit (SIGTERM: Slurm's scancel and time limit; SIGHUP: a
#: dropped ssh session or closed terminal).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def raise_interrupt(signum, frame):
    """A signal handler that turns SIGTERM/SIGHUP into KeyboardInterrupt (as Ctrl-C)."""
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

    def __enter__(self) -> "held":
        if threading.current_thread() is threading.main_thread():
            self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._old_mask is None:
            return False
        # signals already blocked outside (a held() around this one) stay for it
        ours = set(STOP_SIGNALS) - set(self._old_mask)
        pending = set(signal.sigpending()) & ours
        for signum in pending:  # consume them: several signals count as one interrupt
            signal.sigtimedwait([signum], 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)
        self._old_mask = None
        self.interrupted = bool(pending)
        if pending and self.raise_after and exc_type is None:
            raise KeyboardInterrupt
        return False
