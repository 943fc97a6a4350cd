"""Check PyTorch easyconfigs for known performance traps before a multi-hour build.

Each file is parsed with easybuild-framework's own parser (templates, dependencies and
toolchain components resolved through the robot path); findings name the easyconfig
parameter and line, a remedy and the public source: BLAS through FlexiBLAS/OpenBLAS
without imkl (easybuilders/easybuild#931: 28-46 % of the wheel), aarch64 without
ArmComputeLibrary, optarch / -march=native, CUDA without cuda_compute_capabilities,
disabled tests, versions outside PyTorch's compatibility matrix.

Easyconfigs are Python, and EasyBuild's parser executes them: linting an easyconfig
runs its code.  Each file is therefore parsed in a sandbox (lint/sandbox.py):
bubblewrap gives it a read-only file system, a private /tmp, no network and its own
process namespace (nothing it starts outlives it), with memory, process and time limits
(--timeout); it sees only EasyBuild's and the locale's environment variables.  Run as
root it parses as the user nobody, unless --allow-root is given (root inside a user
namespace, without capabilities).  Without bubblewrap (apt-get install bubblewrap) it
falls back to `unshare`, then to a plain child process.  A file that fails
(syntax error, binary or non-UTF-8, crash, hang, a limit) gets one
line on stderr; the other files are still linted.

examples:
  eb-torchperf lint PyTorch-2.9.1-foss-2025a.eb
  eb-torchperf lint --heterogeneous --site-gpus 8.0,9.0 my-easyconfigs/ --format md
  eb-torchperf lint --collection --format md

exit status: 0 no finding at or above --fail-on; 1 some; 2 a file could not be linted
(named on stderr, one line each; the other files are still linted) or a usage error.
"""

import argparse
import os
import shutil
import sys

from eb_torchperf.present import escape
from eb_torchperf.errors import ConfigError
from eb_torchperf.records.findings import FAIL_LEVELS
from eb_torchperf.lint.api import (DEFAULT_PATTERN, collection_easyconfigs, exit_status_for,
                                   lint_paths)
from eb_torchperf.lint.options import (ENV_HETEROGENEOUS, ENV_SITE_GPUS, KNOWN_ARCHS,
                                       LintOptions, host_arch, parse_capabilities)
from eb_torchperf.lint.render import FORMATS, render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the `lint` options to `parser`."""
    parser.add_argument("paths", nargs="*", metavar="FILE_OR_DIR",
                        help="easyconfig files, or directories searched for --pattern files")
    parser.add_argument("--collection", action="store_true",
                        help="also lint every PyTorch-*.eb of the easybuild-easyconfigs "
                             "installed for this Python (found through its package files)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="output format (default: text)")
    parser.add_argument("--fail-on", choices=FAIL_LEVELS, default="error",
                        help="exit 1 when a finding has this severity or higher (default: error)")
    parser.add_argument("--arch", choices=KNOWN_ARCHS, default=None,
                        help="target CPU architecture (default: this host, %s)" % host_arch())
    sites = parser.add_mutually_exclusive_group()
    sites.add_argument("--heterogeneous", dest="heterogeneous", action="store_true",
                       default=None, help="one build serves several CPU types: host-tied "
                       "binaries are a warning (default: $%s, else info)" % ENV_HETEROGENEOUS)
    sites.add_argument("--homogeneous", dest="heterogeneous", action="store_false",
                       help="builds run on the CPU type they serve")
    parser.add_argument("--cuda-compute-capabilities", metavar="CC[,CC...]",
                        help="what `eb --cuda-compute-capabilities` will get (default: the "
                             "EasyBuild configuration)")
    parser.add_argument("--site-gpus", metavar="CC[,CC...]",
                        help="compute capabilities of the site's GPUs (default: $%s)"
                             % ENV_SITE_GPUS)
    parser.add_argument("--robot-paths", metavar="DIR[%sDIR...]" % os.pathsep, default="",
                        help="extra directories with dependency/toolchain easyconfigs, "
                             "searched first")
    parser.add_argument("--no-dependency-check", action="store_true",
                        help="do not report dependencies without an easyconfig")
    parser.add_argument("--pattern", default=DEFAULT_PATTERN,
                        help="file name pattern inside directories (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="seconds one file may take to parse and lint before its child "
                             "process is killed (default %(default)g)")
    parser.add_argument("--allow-root", action="store_true",
                        help="when run as root, parse as root inside a user namespace without "
                             "capabilities (EasyBuild's --allow-use-as-root-and-accept-"
                             "consequences) instead of as the user nobody")


def _options(args: argparse.Namespace) -> LintOptions:
    """LintOptions from parsed arguments and EB_TORCHPERF_* variables.

    Raises:
        ConfigError: an option value is invalid.
    """
    capabilities = site_gpus = None
    if args.cuda_compute_capabilities is not None:
        capabilities = parse_capabilities(args.cuda_compute_capabilities,
                                          "--cuda-compute-capabilities")
    if args.site_gpus is not None:
        site_gpus = parse_capabilities(args.site_gpus, "--site-gpus")
    return LintOptions.from_env(arch=args.arch, heterogeneous=args.heterogeneous,
                                cuda_compute_capabilities=capabilities, site_gpus=site_gpus,
                                check_dependencies=not args.no_dependency_check)


def _root_hint(message: str) -> str:
    """EasyBuild's refusal to run as root, with what to do; other messages unchanged."""
    if "root privileges" not in message:
        return message
    return ("EasyBuild refuses to run as root: run as a normal user, or set "
            "EASYBUILD_ALLOW_USE_AS_ROOT_AND_ACCEPT_CONSEQUENCES=1 (or give --allow-root) "
            "to parse the easyconfigs as root (EasyBuild said: %s)" % message)


def run(args: argparse.Namespace) -> int:
    """Lint `args.paths`, print the report to stdout, and return the exit status.

    Raises:
        ConfigError: invalid options, or EasyBuild missing or misconfigured.
    """
    options = _options(args)
    robot_paths = [path for path in args.robot_paths.split(os.pathsep) if path]
    paths = list(args.paths)
    if args.collection:
        label, files = collection_easyconfigs()
        print("eb-torchperf lint: %s: %d PyTorch easyconfigs" % (label, len(files)),
              file=sys.stderr)
        paths += files
    if not paths:
        raise ConfigError("give easyconfig files or folders, or --collection")
    try:
        results = lint_paths(paths, options=options, robot_paths=robot_paths,
                             pattern=args.pattern, isolate=True, timeout_s=args.timeout,
                             allow_root=args.allow_root)
    except ConfigError as err:
        raise ConfigError(_root_hint(str(err))) from None
    if not results:
        raise ConfigError("no files matching %r in %s" % (args.pattern, ", ".join(paths)))
    for result in results:
        if result.problem:
            print("eb-torchperf lint: %s" % escape.one_line("%s: %s" % (
                result.path, _root_hint(result.problem))),
                  file=sys.stderr)
    color = args.format == "text" and sys.stdout.isatty()
    width = shutil.get_terminal_size((120, 24)).columns if color else 120
    sys.stdout.write(render(results, args.format, color=color, width=width))
    return exit_status_for(results, args.fail_on)
