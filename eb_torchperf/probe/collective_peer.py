"""Rank 1..n-1 of collective.AllReduceGroup: one all-reduce per b"r" on stdin.

    python -s -m ebtp_probe.collective_peer --rank R --world N --store FILE \
        --numel ELEMENTS --backend nccl|gloo

Prints "ready TORCH_VERSION" on stdout once torch is imported and its device chosen
(rank 0 refuses a peer on another torch), joins the process group through the file
store, runs the warm-up collective that rank 0 runs at set-up, and then one
all-reduce per b"r" read from stdin.  b"q" or end of input: wait for the device,
print "done", leave the group, exit 0.  Errors go to stderr (rank 0 quotes the last
line) with exit status 1.
"""

import argparse
import datetime
import os
import sys

from .collective import RENDEZVOUS_TIMEOUT_S, tensor_device
from .parentdeath import die_with_parent


def _args(argv):
    parser = argparse.ArgumentParser(prog="collective_peer")
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--numel", type=int, required=True)
    parser.add_argument("--backend", choices=("nccl", "gloo"), required=True)
    return parser.parse_args(argv)


def serve(torch, args, commands):
    """Join the group, then run one all-reduce per b"r" in `commands` (a binary stream)."""
    dist = torch.distributed
    dist.init_process_group(args.backend, init_method="file://" + args.store, rank=args.rank,
                            world_size=args.world,
                            timeout=datetime.timedelta(seconds=RENDEZVOUS_TIMEOUT_S))
    tensor = torch.ones(args.numel, dtype=torch.float32,
                        device=tensor_device(torch, args.backend, args.rank))
    dist.all_reduce(tensor)  # rank 0's warm-up collective
    done = 0
    try:
        while True:
            chunk = os.read(commands.fileno(), 4096)
            if not chunk:
                break
            runs = chunk.count(b"r")
            for _ in range(runs):
                dist.all_reduce(tensor)
            done += runs
            if b"q" in chunk:
                break
    finally:
        if args.backend == "nccl":
            torch.cuda.synchronize()
        # Rank 0 leaves the group only after every peer said "done": a rank that
        # leaves while another still finishes its last collective breaks it (gloo:
        # "Connection closed by peer").
        print("done", flush=True)
        dist.destroy_process_group()
    return done


def main(argv=None):
    args = _args(argv)
    die_with_parent()
    import torch
    if args.backend == "nccl":
        torch.cuda.set_device(args.rank)
    print("ready", torch.__version__, flush=True)
    serve(torch, args, sys.stdin.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
