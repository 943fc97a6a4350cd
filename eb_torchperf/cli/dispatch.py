"""`eb-torchperf`: command-line shell.  Parses arguments, dispatches, reports errors once.

Each sub-command lives in a module exposing `add_arguments(parser)` and
`run(args) -> int`; they are imported only when chosen, so `eb-torchperf lint` does
not import torch-side code and `audit` does not import EasyBuild.
"""

import argparse
import importlib
import sys

from eb_torchperf import __version__
from eb_torchperf.errors import TorchPerfError

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
}

DESCRIPTION = """\
Is this PyTorch slow, and why?  eb-torchperf audits any Python interpreter's torch
(EasyBuild module, Spack, conda, Debian, a venv) against a reference (usually the
upstream wheel) without installing anything into it: build config side by side
(BLAS_INFO, MKL, oneDNN, OpenMP, CPU capability, -march, CUDA archs, cuDNN), a CPU and
GPU micro-suite measured in alternation (relative OPS, reference = 100 %), and findings
with evidence, an EasyBuild remedy and their public source.  It also lints PyTorch
easyconfigs before a build and runs as an EasyBuild hook (hooks/torchperf.py)."""

EPILOG = """\
exit status: 0 ok; 1 findings at or above --fail-on; 2 usage or tool error.

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


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with one sub-parser per entry of COMMANDS."""
    parser = argparse.ArgumentParser(
        prog="eb-torchperf", description=DESCRIPTION,
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub_parser = sub.add_parser(name, help=help_text, description=module.__doc__,
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args._run(args)
    except TorchPerfError as exc:
        print("eb-torchperf: error: %s" % exc, file=sys.stderr)
        return 2
    except OSError as exc:  # an output file or folder that cannot be written
        print("eb-torchperf: error: %s: %s" % (exc.filename or "I/O", exc.strerror or exc),
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("eb-torchperf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
