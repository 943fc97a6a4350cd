"""Print what the numerical-agreement checks add to a quick audit's wall time.

Usage: .venv/bin/python benchmarks/numerics_cost.py [TARGET [REFERENCE]] [--device D]
(default: this interpreter against itself, an A/A run, --device cpu).

The checks (probe.numerics, issue 30) run once per row, in the first worker pair, after
the row's timed rounds (measure.interleave.AuditRun._numerics), so their cost adds to
the wall time one for one.  This times every such request during one real audit and
prints: the audit's wall time, the seconds spent in the checks, and the growth they
cause (checks / (wall - checks)); issue 30 asks for at most 5 %.  A benchmark, not a
test: run it on an idle machine.
"""

import argparse
import dataclasses
import sys
import time

from eb_torchperf.measure import interleave
from eb_torchperf.measure.interleave import SUITE_OPTIONS, run_audit
from eb_torchperf.analysis.compare import needs_more_pairs
from eb_torchperf.probe import registry


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("target", nargs="?", default=sys.executable)
    parser.add_argument("reference", nargs="?")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "all"))
    args = parser.parse_args(argv)
    reference = args.reference or args.target
    spent = []
    original = interleave.AuditRun._numerics

    def timed(self, *call_args):
        start = time.monotonic()
        try:
            return original(self, *call_args)
        finally:
            spent.append(time.monotonic() - start)

    interleave.AuditRun._numerics = timed
    options = dataclasses.replace(SUITE_OPTIONS["quick"],
                                  allow_same_torch=reference == args.target)
    devices = {"cpu": ("cpu",), "cuda": ("cuda",), "all": ("cpu", "cuda")}[args.device]
    registry.load_suites()
    result = run_audit(args.target, reference, "quick", options=options,
                       judge=needs_more_pairs, devices=devices)
    checks = sum(spent)
    print("quick audit: %.1f s wall, %d rows checked, numerics %.2f s (%.2f s per row); "
          "wall growth %.1f %%" % (result.wall_s, len(spent), checks,
                                   checks / max(1, len(spent)),
                                   100 * checks / max(1e-9, result.wall_s - checks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
