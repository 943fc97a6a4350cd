"""Set-up commands of the reference venv (python -m venv, pip install): their progress
lines, their failure in one line, and their whole process group killed when the audit
is interrupted or times out (no pip left writing into the cache after the audit ends).
"""

import contextlib
import os
import signal
import subprocess
from typing import Callable, Mapping, Optional, Sequence

from eb_torchperf.errors import ConfigError

#: Longest a set-up command may run, seconds (a slow index, a large wheel).
PIP_TIMEOUT_S = 3600
#: pip output lines that carry the cause of a failed install (pip prints the cause
#: of a resolution failure above its final "ERROR: ResolutionImpossible" line).
_PIP_CAUSE = ("ERROR", "requested", "conflict", "No matching distribution")
#: pip output lines passed through as progress (one per package and step).
_PIP_PROGRESS = ("Collecting", "Downloading", "Processing", "Installing", "Successfully",
                 "Requirement already satisfied", "Looking in", "Using cached")


def run_setup(argv: Sequence[str], what: str, env: Optional[Mapping[str, str]] = None,
              log: Optional[Callable[[str], None]] = None) -> None:
    """Run a set-up command; with `log`, its progress lines go to `log` as they come
    ("pip: Collecting torch==2.13.0", ...).

    Raises:
        ConfigError: it failed or did not start (message has the telling lines).
    """
    lines = []
    try:  # its own process group: an interrupt or SIGTERM of the audit kills pip too
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=None if env is None else dict(env),
                                start_new_session=True)
    except OSError as exc:
        raise ConfigError("%s failed: %s" % (what, exc)) from None
    try:
        for raw in proc.stdout:
            line = raw.strip()
            if line:
                lines.append(line)
                if log is not None and line.startswith(_PIP_PROGRESS):
                    log("pip: " + line)
        code = proc.wait(timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ConfigError("%s failed: no end after %d s" % (what, PIP_TIMEOUT_S)) from None
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: no pip left writing into the cache
        _kill_group(proc)
        raise
    finally:
        proc.stdout.close()
    if code != 0:
        causes = [l for l in lines if any(word in l for word in _PIP_CAUSE)] or lines[-1:]
        raise ConfigError("%s failed (exit %d): %s" % (what, code,
                                                       " | ".join(causes[:4]) or "no output"))


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill `proc`'s whole process group (pip and its build children) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
