#!/usr/bin/env python3
"""Lint every PyTorch-*.eb of the installed easybuild-easyconfigs collection.

Prints how many were found and parsed, and a summary table of findings (rule x
severity x count, and how many files each rule hit).  Needs easybuild-framework,
-easyblocks and -easyconfigs (same version).

    python3 scripts/lint_collection.py [--arch x86_64] [--format text|md] [--root DIR]
"""

import argparse
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from eb_torchperf.errors import TorchPerfError  # noqa: E402
from eb_torchperf.lint import LintOptions, lint_paths  # noqa: E402
from eb_torchperf.lint.collection import (collection_version, find_collection,  # noqa: E402
                                          pytorch_easyconfigs)
from eb_torchperf.lint.options import KNOWN_ARCHS, host_arch  # noqa: E402
from eb_torchperf.lint.render import summarize  # noqa: E402


def _rows(results):
    """(rule_id, severity, findings, files) rows, most severe and most frequent first."""
    files = Counter()
    for result in results:
        for key in {(f.rule_id, f.severity) for f in result.findings}:
            files[key] += 1
    return [(row["rule_id"], row["severity"], row["count"], files[(row["rule_id"], row["severity"])])
            for row in summarize(results)["by_rule"]]


def _print_table(rows, fmt):
    header = ("rule", "severity", "findings", "files")
    if fmt == "md":
        print("| Rule | Severity | Findings | Files |\n|---|---|---:|---:|")
        for rule, severity, count, nfiles in rows:
            print("| `%s` | %s | %d | %d |" % (rule, severity, count, nfiles))
        return
    print("%-24s %-8s %8s %6s" % header)
    for rule, severity, count, nfiles in rows:
        print("%-24s %-8s %8d %6d" % (rule, severity, count, nfiles))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=KNOWN_ARCHS, default=host_arch())
    parser.add_argument("--format", choices=("text", "md"), default="text")
    parser.add_argument("--root", help="easyconfigs directory (default: the installed collection)")
    args = parser.parse_args(argv)
    root = args.root or find_collection()
    if not root:
        print("lint_collection: easybuild-easyconfigs is not installed (pip install "
              "easybuild-easyconfigs)", file=sys.stderr)
        return 2
    files = pytorch_easyconfigs(root)
    start = time.perf_counter()
    try:
        results = lint_paths(files, options=LintOptions(arch=args.arch))
    except TorchPerfError as err:
        print("lint_collection: %s" % err, file=sys.stderr)
        return 2
    elapsed_s = time.perf_counter() - start
    summary = summarize(results)
    print("easybuild-easyconfigs %s at %s (target %s): %d PyTorch-*.eb files, %d parsed, "
          "%d not lintable, %d findings, %.1f s"
          % (collection_version() or "?", root, args.arch, len(files), summary["linted"],
             summary["problems"], summary["findings"], elapsed_s))
    for result in results:
        if result.problem:
            print("  not lintable: %s: %s" % (result.path, result.problem))
    _print_table(_rows(results), args.format)
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
