"""What a fresh worker pair costs (spawned vs forked from a zygote), and whether the
children of one zygote vary as much as fresh interpreters do (issue 26).

Usage:
  python benchmarks/fresh_pairs.py [--python PY] [--pairs N] [--zygotes Z]
                                   [--only BENCH ...] [--markdown FILE]

Prints two tables:
1. the wall seconds to have a pair of workers ready to measure (both sides started,
   hello read): spawned interpreters (import torch each) against forks of two zygotes
   (the zygotes' own start given apart);
2. per benchmark, the spread (coefficient of variation) of per-process median times:
   over spawned processes, over children within one zygote, and between zygotes (the
   means of each zygote's children).  If between-zygote spread is larger than within,
   the audit must rotate zygotes (RunnerOptions.zygote_pairs).
A benchmark, not a test: run it on a quiet host (it says how busy the host was).
"""

import argparse
import statistics
import sys
import time

from eb_torchperf.measure import contention as busy
from eb_torchperf.measure.options import allowed_cores
from eb_torchperf.measure.runner import ProbeBundle, Worker
from eb_torchperf.measure.zygote import Zygote
from eb_torchperf.probe import contention as counters
from eb_torchperf.probe import registry

#: Rows that span the kinds of work: all-core GEMM, memory-bound, one-thread dispatch.
DEFAULT_ROWS = ("matmul_fp32", "softmax", "add_bandwidth", "conv3x3", "dispatch")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--pairs", type=int, default=6, help="processes per mode (default 6)")
    parser.add_argument("--zygotes", type=int, default=3, help="zygotes (default 3)")
    parser.add_argument("--only", action="append", metavar="BENCH")
    parser.add_argument("--markdown", metavar="FILE")
    return parser.parse_args(argv)


def _rows(only):
    registry.load_suites()
    plan = registry.plan("quick", ("cpu",), None, cores=allowed_cores())
    wanted = only or DEFAULT_ROWS
    return [(n, p) for n, p in plan if n in wanted and p.get("threads") in (None, "all")]


def _measure(worker, rows, load):
    """Median seconds per call of each row in one process (5 blocks of 15 ms)."""
    out = {}
    for name, params in rows:
        prep = worker.request("prepare", 120, bench=name, params=params, min_sample_s=0.002)
        times = []
        for _ in range(5):
            reply = worker.request("run", 120, bench=name, params=params,
                                   number=prep["number"], warmup_s=0.01, block_s=0.015)
            times.extend(reply["times_s"])
            load.append(busy.fractions(reply.get("contention") or {}))
        worker.request("release", 60)
        out[name + " " + registry.params_json(params)] = statistics.median(times)
    return out


def _cv(values):
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def _spawned(args, bundle, rows, load):
    """Per-process medians and start costs of `args.pairs` spawned pairs."""
    spawned, cost = [], []
    for _ in range(args.pairs):
        began = time.monotonic()
        pair = [Worker(args.python, bundle.path, label) for label in ("target", "reference")]
        for w in pair:
            w.spawn()
        for w in pair:
            w.wait_started()
        cost.append(time.monotonic() - began)
        spawned.append(_measure(pair[0], rows, load))
        for w in pair:
            w.close()
    return spawned, cost


def run(args):
    rows = _rows(args.only)
    lines, load = [], []
    with ProbeBundle() as bundle:
        spawned, spawn_cost = _spawned(args, bundle, rows, load)
        per_zygote, fork_cost, zygote_cost = [], [], []
        for _ in range(args.zygotes):
            began = time.monotonic()
            zygotes = [Zygote(args.python, bundle.path, label) for label in ("target", "reference")]
            for z in zygotes:
                z.spawn()
            for z in zygotes:
                z.wait_started()
            zygote_cost.append(time.monotonic() - began)
            if not all(z.fork_safe for z in zygotes):
                lines.append("zygote not fork safe: %s" % zygotes[0].reason)
                for z in zygotes:
                    z.close()
                break
            children = []
            for _ in range(args.pairs):
                began = time.monotonic()
                pair = [z.fork_worker(z.label) for z in zygotes]
                for w in pair:
                    w.wait_started()
                fork_cost.append(time.monotonic() - began)
                children.append(_measure(pair[0], rows, load))
                for w in pair:
                    w.close()
            per_zygote.append(children)
            for z in zygotes:
                z.close()
    return _report(rows, spawned, per_zygote, spawn_cost, fork_cost, zygote_cost, load, lines)


def _report(rows, spawned, per_zygote, spawn_cost, fork_cost, zygote_cost, load, lines):
    med = statistics.median
    lines += ["host: %d allowed CPUs; %s" % (allowed_cores(), busy.host_load(load)), "",
              "| fresh pair | wall s (median, min-max) | n |", "|---|---|---|",
              "| spawned (import torch x2, overlapped) | %.3f (%.3f-%.3f) | %d |"
              % (med(spawn_cost), min(spawn_cost), max(spawn_cost), len(spawn_cost))]
    if fork_cost:
        lines += ["| forked from two zygotes | %.4f (%.4f-%.4f) | %d |"
                  % (med(fork_cost), min(fork_cost), max(fork_cost), len(fork_cost)),
                  "| (a pair of zygotes, once per %s pairs) | %.3f | %d |"
                  % ("zygote_pairs", med(zygote_cost), len(zygote_cost))]
    lines += ["", "| row | CV spawned | CV within zygote (median) | CV between zygotes |",
              "|---|---|---|---|"]
    for key in (spawned[0] if spawned else {}):
        within = [_cv([c[key] for c in z]) for z in per_zygote if len(z) > 1]
        between = _cv([statistics.fmean(c[key] for c in z) for z in per_zygote])
        lines.append("| %s | %.1f %% | %s | %s |" % (
            key, 100 * _cv([s[key] for s in spawned]),
            "%.1f %%" % (100 * med(within)) if within else "-",
            "%.1f %%" % (100 * between) if len(per_zygote) > 1 else "-"))
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    text = run(args)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write("# Fresh worker pairs: spawn vs fork\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
