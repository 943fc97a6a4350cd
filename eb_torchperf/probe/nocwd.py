"""Start the target's Python without the current folder on sys.path.

`python -m MODULE` and `python -c CODE` put the current folder first on sys.path, so a
`torch/` (or `ebtp_probe/`) folder where the user runs eb-torchperf would be imported
instead of the target's own.  The code below drops that first entry before anything
is imported (PYTHONPATH, which the runner sets on purpose, stays); Python 3.11's
`-P` does the same but the target may be older.  Standard library only: the runner
and the probe both use it.
"""

from typing import List

#: Removes the entry `-c`/`-m` put first on sys.path (none under -P / PYTHONSAFEPATH).
_DROP_CWD = "import sys\nif not getattr(sys.flags, 'safe_path', False):\n    del sys.path[0]\n"

#: `python -s -c RUN_MODULE MODULE ARGS...` runs MODULE as `-m MODULE ARGS...` would.
RUN_MODULE = _DROP_CWD + ("import runpy\n"
                          "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")


def code_argv(python: str, code: str, *args: str) -> List[str]:
    """`python -s -c CODE ARGS...` with the current folder off sys.path."""
    return [python, "-s", "-c", _DROP_CWD + code, *args]


def module_argv(python: str, module: str, *args: str) -> List[str]:
    """`python -s -m MODULE ARGS...` with the current folder off sys.path."""
    return [python, "-s", "-c", RUN_MODULE, module, *args]
