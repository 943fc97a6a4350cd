"""`eb-torchperf`: command-line shell.  Parses arguments, dispatches, reports errors once.

Each sub-command lives in a module exposing `add_arguments(parser)` and
`run(args) -> int`; they are imported only when chosen, so `eb-torchperf lint` does
not import torch-side code and `audit` does not import EasyBuild.
"""

import argparse
import datetime
import importlib
import os
import signal
import sys
import tempfile
import traceback

from eb_torchperf.measure import interrupts
from eb_torchperf import __version__
from eb_torchperf.present import escape
from eb_torchperf.errors import TorchPerfError
#: Exit statuses (their one home: records.findings); see EPILOG.
from eb_torchperf.records.findings import (  # noqa: F401  (re-exported)
    EXIT_ERROR as EXIT_INPUT, EXIT_FINDINGS, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK,
    EXIT_PIPE)

#: name -> (module, one-line help).  Order is the order of `--help`.
COMMANDS = {
    "audit": ("eb_torchperf.cli.audit",
              "measure a PyTorch interpreter against a reference (the main job)"),
    "explain": ("eb_torchperf.cli.explain",
                "profile target and reference per operator, and try run-time remedies"),
    "probe": ("eb_torchperf.cli.probe",
              "print the build/runtime facts of an interpreter's torch as JSON (no benchmarks)"),
    "sanity-check": ("eb_torchperf.cli.sanity_check",
                     "audit an installed PyTorch under the site policy; exit status is the verdict"),
    "lint": ("eb_torchperf.cli.lint",
             "check PyTorch easyconfigs for known performance traps before building"),
    "report": ("eb_torchperf.cli.report", "re-render the reports of a stored results JSON"),
    "compare": ("eb_torchperf.cli.compare", "compare two stored runs (before/after, two nodes)"),
    "fleet": ("eb_torchperf.cli.fleet",
              "audit on every node type of a Slurm cluster and report them side by side"),
    "gpu": ("eb_torchperf.cli.gpu",
            "show the GPU tables and GPU findings of an audit results file"),
    "sources": ("eb_torchperf.cli.sources",
                "collect exactly the source files an easyconfig names into a --sourcepath folder"),
    "db": ("eb_torchperf.cli.db", "the results database: where it is; import results JSON files"),
    "history": ("eb_torchperf.cli.history", "list stored audits, or write the HTML history"),
    "regressions": ("eb_torchperf.cli.regressions",
                    "compare each stored build with the previous build on its node type"),
    "hooks-path": ("eb_torchperf.cli.hooks_path",
                   "print the path of the installed EasyBuild hooks file (for eb --hooks=)"),
}

DESCRIPTION = """\
Is this PyTorch slow, and why?  eb-torchperf audits any Python interpreter's torch
(EasyBuild module, Spack, conda, Debian, a venv) against a reference (usually the
upstream wheel) without installing anything into it: build config side by side
(BLAS_INFO, MKL, oneDNN, OpenMP, CPU capability, -march, CUDA archs, cuDNN), a CPU and
GPU micro-suite measured in alternation (relative OPS, reference = 100 %), and findings
with evidence, an EasyBuild remedy and their public source.  It also lints PyTorch
easyconfigs before a build and runs as an EasyBuild hook
(`eb --hooks="$(eb-torchperf hooks-path)"`)."""

EPILOG = """\
exit status (every command):
  0    ok: no finding at or above --fail-on
  1    a finding at or above --fail-on (nothing else exits 1)
  2    usage or input error: a bad option, an unreadable or malformed file, an output
       that cannot be written, a target that fails or an audit cut short (one line
       says which; results measured so far are still written)
  3    internal error (a bug in eb-torchperf): one line says where the traceback was
       saved; please report it
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT); what was measured is written first
  141  the reader of the output went away (`| head -1`); files were written first

examples:
  eb-torchperf audit --python /usr/bin/python3 --reference wheel==2.13.0
  eb-torchperf audit --python $EBROOTPYTORCH/../../Python/3.12.3-GCCcore-13.3.0/bin/python \\
      --reference ~/venvs/torch-wheel/bin/python --suite full
  eb-torchperf explain --python /usr/bin/python3 --reference wheel==2.13.0
  eb-torchperf probe --python python3
  eb-torchperf lint easybuild/easyconfigs/p/PyTorch/PyTorch-2.9.1-foss-2025a.eb
  eb-torchperf report reports/torchperf-20261130-174900.json --format html,md
  eb-torchperf compare before.json after.json
"""


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the usage block stays in
    --help): `eb-torchperf audit: error: argument --suite: invalid choice: 'nope' ...
    (see eb-torchperf audit --help)`, exit status 2.  Sub-parsers inherit the class."""

    def error(self, message):
        self.exit(EXIT_INPUT, "%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))


def build_parser(load=None) -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per entry of COMMANDS.

    Args:
        load: names of the sub-commands whose modules are imported and whose options
            are added (None: all of them).  The others are listed by name and help
            line only, from COMMANDS, so `eb-torchperf --help` imports no sub-command.
    """
    parser = OneLineParser(
        prog="eb-torchperf", description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        if load is not None and name not in load:
            sub.add_parser(name, help=help_text)
            continue
        module = importlib.import_module(module_name)
        sub_parser = sub.add_parser(name, help=help_text, description=module.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(_run=module.run)
    return parser


def _tolerant_streams() -> None:
    """Characters the terminal's encoding lacks (PYTHONIOENCODING=latin-1, a C locale)
    are written as escapes instead of crashing the command."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot be reconfigured
                pass


def _missing_streams() -> None:
    """A closed stdin, stdout or stderr (`>&-`) becomes /dev/null: no later file takes
    its descriptor, and printing to it is not an error."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, mode, closefd=False))


def _reader_gone() -> int:
    """stdout's reader closed the pipe: the rest goes to /dev/null, quietly (also
    Python's flush at exit), and the status is EXIT_PIPE."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    return EXIT_PIPE


def save_traceback(argv) -> str:
    """Write the current exception's traceback to a new file; returns its path.

    The file goes to $TMPDIR (else /tmp) as eb-torchperf-crash-<UTC time>-<random>.txt;
    where that cannot be written, to the working directory.
    """
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    text = "eb-torchperf %s\nargv: %r\n\n%s" % (__version__, list(argv or sys.argv[1:]),
                                               traceback.format_exc())
    for folder in (tempfile.gettempdir(), os.getcwd()):
        try:
            fd, path = tempfile.mkstemp(prefix="eb-torchperf-crash-%s-" % stamp,
                                        suffix=".txt", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(text)
            return path
        except OSError:
            continue
    return "nowhere (no writable folder)"


def _error(message: str) -> None:
    print("eb-torchperf: error: %s" % escape.one_line(message), file=sys.stderr)


def chosen_command(argv) -> tuple:
    """The sub-command `argv` names, as a tuple of zero or one COMMANDS key: the first
    word that is not an option (the top level has only --help and --version)."""
    for word in argv:
        if word == "--":
            break
        if not word.startswith("-"):
            return (word,) if word in COMMANDS else ()
    return ()


def main(argv=None) -> int:
    """Entry point of the console script; returns the exit status.

    Only the chosen sub-command's module is imported (see build_parser).  Exit
    statuses: EPILOG."""
    _missing_streams()
    _tolerant_streams()
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(load=chosen_command(argv))
    args = parser.parse_args(argv)
    try:
        return args._run(args)
    except TorchPerfError as exc:
        _error(str(exc))
        return EXIT_INPUT
    except BrokenPipeError:
        return _reader_gone()
    except OSError as exc:  # an output file or folder (or stdout: >/dev/full) unwritable
        _error("%s: %s" % (exc.filename or "cannot write to standard output",
                           exc.strerror or exc))
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("eb-torchperf: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line, the traceback in a file  # noqa: BLE001
        where = save_traceback(argv)
        _error("internal error (a bug in eb-torchperf): %s: %s; traceback saved to %s"
               % (type(exc).__name__, exc, where))
        return EXIT_INTERNAL


def console_main() -> int:
    """The `eb-torchperf` console script: `main`, then Ctrl-C, SIGTERM, SIGHUP and
    SIGQUIT ignored until the process has exited.  Inside `main` every interrupt ends
    in one line (exit 130); once it has returned, all is written and stored, and an
    interrupt in the interpreter's last instant exited 130 with no line (a fresh
    user's `timeout -s INT`, 3 of 25 tries): its status is now the audit's own."""
    status = main()
    for signum in interrupts.STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    return status


if __name__ == "__main__":
    sys.exit(console_main())
