"""Does a memory-bound row's speed depend on which allocation of its inputs it uses?

Usage: PYTHON benchmarks/placement_probe.py [--allocations N]

In one process, with the worker's malloc settings (eb_torchperf/probe/allocator.py),
allocate the inputs of the LayerNorm and EmbeddingBag rows N times (keeping the old
ones alive, so each allocation gets new pages) and print the median ms per call of 6
blocks of 10 calls for each.  Spread between allocations = physical placement; spread
between the blocks of one allocation = the host's memory speed changing.  Issue 16,
2-core dev VM: EmbeddingBag 0.31-0.66 ms by allocation, LayerNorm blocks 1.4-3.6 ms.
A benchmark, not a test: run it on a quiet machine.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from eb_torchperf.probe import allocator, timing  # noqa: E402


def blocks(fn, count=6, calls=10):
    """Median ms per call of `count` blocks of `calls` single timed calls."""
    return [1e3 * statistics.median(timing.time_calls(fn, 1) for _ in range(calls))
            for _ in range(count)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--allocations", type=int, default=8, metavar="N",
                        help="fresh allocations of the inputs to time (default 8)")
    args = parser.parse_args(argv)
    if args.allocations < 1:
        parser.error("--allocations must be >= 1")
    print("allocator:", allocator.configure()["reason"])
    import torch
    keep = []
    for index in range(args.allocations):
        x, w, b = torch.randn(8192, 768), torch.randn(768), torch.randn(768)
        bag = torch.nn.EmbeddingBag(200000, 64, mode="sum")
        idx = torch.randint(0, 200000, (4096 * 20,))
        offsets = torch.arange(0, 4096 * 20, 20)
        keep.append((x, bag))
        rows = {"layernorm": lambda: torch.nn.functional.layer_norm(x, (768,), w, b),
                "embedding_bag": lambda: bag(idx, offsets)}
        for fn in rows.values():
            for _ in range(5):
                fn()
        print("allocation %d: %s" % (index, " | ".join(
            "%s %s ms" % (name, " ".join("%.2f" % v for v in blocks(fn)))
            for name, fn in rows.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
