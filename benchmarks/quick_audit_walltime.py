"""Print the wall time of a quick audit (target + reference together) and its rows.

Usage: .venv/bin/python benchmarks/quick_audit_walltime.py [TARGET [REFERENCE]]
(default: Debian's /usr/bin/python3 against this interpreter's torch).  Target on the
2-core dev machine: <= 60 s.  A benchmark, not a test: it prints figures.
"""

import sys
import time

from eb_torchperf.measure.interleave import run_audit
from eb_torchperf.analysis.compare import compare, geomean_relative_ops, needs_more_pairs


def main(argv):
    target = argv[1] if len(argv) > 1 else "/usr/bin/python3"
    reference = argv[2] if len(argv) > 2 else sys.executable
    start = time.monotonic()
    result = run_audit(target, reference, "quick", judge=needs_more_pairs)
    wall = time.monotonic() - start
    comparisons = compare(result)
    for c in comparisons:
        print("%-18s %-40s %8s" % (c.bench, c.params, "%.1f %%" % (100 * c.relative_ops)
                                   if c.relative_ops else "-"))
    geo = geomean_relative_ops(comparisons)
    print("geometric mean relative OPS: %.1f %%" % (100 * geo) if geo else "no reference")
    print("quick audit wall time (target + reference): %.1f s, complete=%s"
          % (wall, result.complete))


if __name__ == "__main__":
    main(sys.argv)
