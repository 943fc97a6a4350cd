"""Repeat the quick A/A audit (one interpreter against itself) and print the spread.

Usage: .venv/bin/python benchmarks/aa_repeat.py [RUNS [PYTHON]]
Prints, per benchmark, the relative OPS of every run and the worst |1 - ratio|: the
measured A/A floor to compare with eb_torchperf.analysis.compare.AA_FLOOR.  Run it on a quiet
machine; it is a benchmark, not a test.  benchmarks/aa_table.py prints more per row
(median interval half-width, pairs, inconclusive runs) as a Markdown table.
"""

import collections
import dataclasses
import sys

from eb_torchperf.measure.interleave import SUITE_OPTIONS, run_audit
from eb_torchperf.analysis.compare import AA_FLOOR, compare, needs_more_pairs

#: One interpreter on both sides: an A/A run must say so (allow_same_torch).
AA_OPTIONS = dataclasses.replace(SUITE_OPTIONS["quick"], allow_same_torch=True)


def main(argv):
    runs = int(argv[1]) if len(argv) > 1 else 3
    python = argv[2] if len(argv) > 2 else sys.executable
    ratios = collections.defaultdict(list)
    walls = []
    for _ in range(runs):
        result = run_audit(python, python, "quick", options=AA_OPTIONS, judge=needs_more_pairs)
        walls.append(result.wall_s)
        for c in compare(result):
            ratios["%s %s" % (c.bench, c.params)].append(c.relative_ops)
    worst_all = 0.0
    for name, values in ratios.items():
        # None: the row was inconclusive in that run (see benchmarks/aa_table.py)
        worst = max((abs(1 - v) for v in values if v is not None), default=0.0)
        worst_all = max(worst_all, worst)
        print("%-60s %s  worst %.1f %%" % (name, " ".join("inc." if v is None else "%.3f" % v
                                                          for v in values), 100 * worst))
    print("runs: %d, wall per run: %s s; worst |1 - ratio| over all rows: %.1f %% (floor %.0f %%)"
          % (runs, ", ".join("%.0f" % w for w in walls), 100 * worst_all, 100 * AA_FLOOR))


if __name__ == "__main__":
    main(sys.argv)
