"""Time the models at TorchBench's CPU batch sizes by hand, two interpreters, whole
processes alternating, and print each model's relative OPS (reference = 100 %).

Usage:
  python benchmarks/torchbench_batch.py TARGET_PYTHON REFERENCE_PYTHON [--rounds N]
                                        [--steps N] [--warmup N] [--audit RESULTS.json]

The check of issue 26: a `--suite models` row (the audit's forked pairs) should lie
within 1.3x of the same model timed at TorchBench's batch (alexnet 16, resnet50 4, a
BERT-base encoder layer at 4 x 128), measured in the same hour.  Each round starts one
fresh process per interpreter, in the order A B, then B A, ...; a process builds each
model with the suite's own definitions (eb_torchperf.probe.suite_models.make_step: the
same layers, weights=None), runs untimed steps (at least one, then up to `--warmup` while
they have taken under 3 s) and then `--steps` timed steps, and prints the median seconds
per step.  The wheel's training steps settle only after 3-4 steps on the 2-core VM
(alexnet at batch 16: 0.70, 0.68, 0.65, 0.64, then 0.46-0.49 s): one warm-up step put
Debian's alexnet training at 23-27 % where settled steps give 20 %.  Relative OPS per
model is the median over rounds of reference s / target s.  With `--audit` the audit's
model rows are printed beside, and their factor (hand / audit).  A benchmark, not a
test: run it on an idle machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

#: model -> TorchBench-batch params for suite_models.make_step (issue 26's hand figures).
HAND = {
    "alexnet": {"kind": "torchvision", "model": "alexnet", "batch": 16},
    "resnet50": {"kind": "torchvision", "model": "resnet50", "batch": 4},
    "bert": {"kind": "bert", "hidden": 768, "seq": 128, "layers": 1, "batch": 4},
}

CHILD = r"""
import json, statistics, sys, time
import torch
from eb_torchperf.probe import suite_models
hand, steps, warmup = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out = {}
for name, params in hand.items():
    for mode in ("infer", "train"):
        step = suite_models.make_step(torch, params, mode)
        began, done = time.perf_counter(), 0
        while done < 1 or (done < warmup and time.perf_counter() - began < 3.0):
            step()
            done += 1
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            step()
            times.append(time.perf_counter() - start)
        out["%s_%s" % (name, mode)] = statistics.median(times)
print(json.dumps(out))
"""


def time_once(python, steps, warmup):
    """{row: median seconds per step} from one fresh process of `python`."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    done = subprocess.run([python, "-c", CHILD, json.dumps(HAND), str(steps), str(warmup)],
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        sys.exit("torchbench_batch: %s failed: %s" % (python, done.stderr.strip()[-400:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def audit_rows(path):
    """{row: relative OPS} of an audit's model rows (estimates for inconclusive ones)."""
    with open(path) as handle:
        rows = json.load(handle)["analysis"]["rows"]
    return {c["bench"]: c.get("relative_ops") or c.get("estimate") for c in rows
            if c["bench"].split("_")[0] in ("alexnet", "resnet50", "bert")
            and "cuda" not in c["bench"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target",
                        help="the Python of the torch to check (Debian's: /usr/bin/python3)")
    parser.add_argument("reference", help="the reference Python (the wheel's venv)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="fresh processes per interpreter, alternating (default 2)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per row (default 3)")
    parser.add_argument("--warmup", type=int, default=4,
                        help="untimed steps first, at most (default 4; 3 s)")
    parser.add_argument("--audit", metavar="RESULTS.json",
                        help="a --suite models audit's results, printed beside with the factor")
    args = parser.parse_args(argv)
    ratios = {}
    for round_no in range(args.rounds):
        order = [args.target, args.reference][:: 1 if round_no % 2 == 0 else -1]
        times = {python: time_once(python, args.steps, args.warmup) for python in order}
        for row, seconds in times[args.target].items():
            ratios.setdefault(row, []).append(times[args.reference][row] / seconds)
    audit = audit_rows(args.audit) if args.audit else {}
    print("| row | hand, TorchBench batch | audit | factor |")
    print("|---|---|---|---|")
    for row, values in ratios.items():
        hand = statistics.median(values)
        seen = audit.get(row)
        print("| %s | %.1f %% | %s | %s |" % (
            row, 100 * hand, "%.1f %%" % (100 * seen) if seen else "-",
            "%.2f" % max(hand / seen, seen / hand) if seen else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
