"""`eb-torchperf hooks-path`: print the path of the installed EasyBuild hooks file.

The file ships inside the package (eb_torchperf/easybuild/hooks_file/torchperf.py), so
a site that pip-installed eb_torchperf into the Python running `eb` needs nothing else:

    eb --hooks="$(eb-torchperf hooks-path)" PyTorch-2.9.1-foss-2025a.eb
    export EASYBUILD_HOOKS="$(eb-torchperf hooks-path)"

(`eb --use-entrypoints` is the other way: the same two hooks as entry points.)
"""

import argparse
import os

import eb_torchperf

#: The hooks file, relative to the package folder.
HOOKS_FILE = os.path.join("easybuild", "hooks_file", "torchperf.py")


def hooks_file() -> str:
    """Absolute path of the hooks file for `eb --hooks` (exists in every install)."""
    return os.path.join(os.path.dirname(os.path.abspath(eb_torchperf.__file__)), HOOKS_FILE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`hooks-path` takes no options."""


def run(args: argparse.Namespace) -> int:
    """Print the hooks file's path; exit status 0."""
    print(hooks_file())
    return 0
