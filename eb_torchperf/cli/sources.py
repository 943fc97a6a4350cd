"""`eb-torchperf sources EASYCONFIG... DIR`: put exactly the files an easyconfig names
into a `--sourcepath` folder.

The file names are those EasyBuild looks for: the easyconfig's `sources` and, per
extension, its `source_tmpl` (or `exts_default_options`'s), with `%(name)s` /
`%(version)s` filled in.  Each file is taken from DIR itself (already there), copied
from a `--from` folder, or fetched with `pip download --no-deps` as `name==version`
read from the file name (pip's own index settings apply, e.g. a site mirror;
give `--pip-option=--index-url=...` for download.pytorch.org).  Wheels and sdists can be
fetched; a file that neither gives is listed in one line at the end (exit status 2).

Easyconfigs are Python: EasyBuild's parser executes them.  This command parses them in
the same sandbox as `eb-torchperf lint` (lint/sandbox.py): read-only file system, no
network, limits; only the file names come back.

Example (the reference module of a site):

    eb-torchperf sources easyconfigs/PyTorch-2.13.0-wheel.eb ~/eb-sources \\
        --pip-option=--extra-index-url=https://download.pytorch.org/whl/cpu
    eb --sourcepath=~/eb-sources easyconfigs/PyTorch-2.13.0-wheel.eb
"""

import sys

from eb_torchperf.easybuild.sources import collect, source_files
from eb_torchperf.errors import ConfigError


def add_arguments(parser) -> None:
    parser.add_argument("easyconfigs", nargs="+", metavar="EASYCONFIG",
                        help="easyconfig file(s) whose sources to collect")
    parser.add_argument("dest", metavar="DIR", help="the --sourcepath folder (created)")
    parser.add_argument("--from", dest="from_dirs", action="append", default=[], metavar="DIR",
                        help="copy files found in this folder (repeatable) before downloading")
    parser.add_argument("--pip-option", action="append", default=[], metavar="OPT",
                        help="extra option for pip download, e.g. "
                             "--pip-option=--extra-index-url=https://download.pytorch.org/whl/cpu")
    parser.add_argument("--list", action="store_true",
                        help="print the file names and fetch nothing")


def run(args) -> int:
    files = []
    for path in args.easyconfigs:
        files.extend(f for f in source_files(path) if f not in files)
    if args.list:
        for filename in files:
            print(filename)
        return 0
    missing = collect(files, args.dest, args.from_dirs, args.pip_option,
                      log=lambda msg: print(msg, file=sys.stderr))
    if missing:
        raise ConfigError("%d of %d file(s) not collected into %s: %s" % (
            len(missing), len(files), args.dest, "; ".join(missing)))
    print("%d file(s) in %s: eb --sourcepath=%s ..." % (len(files), args.dest, args.dest))
    return 0
