"""Interpreters that misbehave on purpose: crash or hang at the N-th worker request.

A wrapper script runs a real interpreter with a `sitecustomize` on PYTHONPATH that
replaces sys.stdin (where the worker reads its requests) by a reader that kills the
process with SIGSEGV, or sleeps forever (touching $EBTP_FAULT_MARK first, when set), when
request number N arrives (in a worker forked from a zygote, the request stream it opens);
or ("slow-quit")
that touches $EBTP_FAULT_MARK and takes $EBTP_FAULT_SLEEP seconds to quit; or
("fail-prepare") whose every benchmark fails (an unknown name is asked for).
"""

import os
import stat
import textwrap

SITECUSTOMIZE = '''
import os, signal, sys, time
_ACTION = os.environ.get("EBTP_FAULT_ACTION")
_AT = int(os.environ.get("EBTP_FAULT_AT", "0"))

class _Faulty:
    def __init__(self, stream):
        self.stream = stream
        self.count = 0
    def __iter__(self):
        for line in self.stream:
            self.count += 1
            if _ACTION == "slow-quit" and '"op": "quit"' in line:
                open(os.environ["EBTP_FAULT_MARK"], "w").close()  # the shutdown began
                time.sleep(float(os.environ.get("EBTP_FAULT_SLEEP", "4")))
            if _ACTION == "fail-prepare" and '"op": "prepare"' in line:  # ok: false
                line = line.replace('"bench": "', '"bench": "no-such-')
            if self.count == _AT:
                if _ACTION == "crash":
                    os.kill(os.getpid(), signal.SIGSEGV)
                if os.environ.get("EBTP_FAULT_MARK"):  # the hang began
                    open(os.environ["EBTP_FAULT_MARK"], "w").close()
                time.sleep(10 ** 6)
            yield line

if _ACTION and "--worker" in sys.argv:
    sys.stdin = _Faulty(sys.stdin)
if _ACTION and "--zygote" in sys.argv:  # a forked worker opens its requests with fdopen
    _real_fdopen, _zygote = os.fdopen, os.getpid()
    def _fdopen(fd, mode="r", *args, **kwargs):
        stream = _real_fdopen(fd, mode, *args, **kwargs)
        return _Faulty(stream) if mode == "r" and os.getpid() != _zygote else stream
    os.fdopen = _fdopen
'''


def faulty_python(tmp_path, real_python, action, at=0, mark=None):
    """Write a wrapper interpreter that crashes or hangs at request `at`, or quits slowly
    after touching `mark`; return its path."""
    site = tmp_path / ("site-" + action)
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    script = tmp_path / ("python-" + action)
    script.write_text(textwrap.dedent('''\
        #!/bin/sh
        export PYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" EBTP_FAULT_ACTION=%s EBTP_FAULT_AT=%d
        export EBTP_FAULT_MARK="%s"
        exec %s "$@"
        ''' % (site, action, at, mark or "", real_python)))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)
