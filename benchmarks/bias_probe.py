"""Prototype: where does the per-process A/A bias come from?  (issue 16, item 1)

Two fresh worker processes of one interpreter measure the same rows in alternating
blocks (A B B A ...); per worker pair the ratio of medians.  The spread of the
per-pair ratios over fresh pairs is the per-process bias.  Variants change one
suspect for BOTH sides (diagnostics, not fixes):

  base     nothing changed
  stop     the idle side is SIGSTOPped during the other's block
  passive  OMP_WAIT_POLICY=PASSIVE on both sides (diagnostic only)
  bind     OMP_PROC_BIND=close OMP_PLACES=cores on both sides (thread placement)
  thpoff   prctl(PR_SET_THP_DISABLE) in both workers (transparent huge pages)
  touch    inputs allocated empty, first touched in parallel (zero_), then filled
  fresh    inputs re-allocated before every block (first touch / placement per block)

Per block each worker also records its threads' CPUs (/proc/self/task/*/stat field
39) and how many threads ran, so thread collisions can be set against the ratio.

Usage: python3 benchmarks/bias_probe.py OUT.json [PAIRS [ROUNDS [VARIANTS]]]
It is a benchmark, not a test: run it on an otherwise idle machine.
"""

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time

ROWS = ("matmul512", "conv3x3", "add16M", "layernorm", "dispatch")
VARIANTS = {
    "base": {}, "stop": {}, "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "bind": {"OMP_PROC_BIND": "close", "OMP_PLACES": "cores"},
    "thpoff": {"BIAS_THP_OFF": "1"}, "touch": {"BIAS_TOUCH": "1"}, "fresh": {"BIAS_FRESH": "1"},
}


# -- worker ---------------------------------------------------------------------------

def _thread_cpus():
    rows = []
    base = "/proc/self/task"
    for tid in os.listdir(base):
        try:
            with open("%s/%s/stat" % (base, tid)) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the ")": field 3 is index 0; utime = field 14, processor = field 39
        rows.append((int(tid), int(fields[39 - 3]), int(fields[14 - 3]) + int(fields[15 - 3])))
    return rows


def _anon_huge_kb():
    try:
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _make(torch, row, touch):
    def tensor(*shape):
        if touch:
            t = torch.empty(*shape)
            t.zero_()          # first touch by the OpenMP threads
            return t.normal_()
        return torch.randn(*shape)
    if row == "matmul512":
        a, b, out = tensor(512, 512), tensor(512, 512), torch.empty(512, 512)
        return lambda: torch.mm(a, b, out=out)
    if row == "conv3x3":
        conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False)
        x = tensor(4, 64, 56, 56)

        def call():
            with torch.no_grad():
                conv(x)
        return call
    if row == "add16M":
        a, b, out = tensor(1 << 24), tensor(1 << 24), tensor(1 << 24)
        return lambda: torch.add(a, b, out=out)
    if row == "layernorm":
        x = tensor(8192, 768)
        norm = torch.nn.LayerNorm(768)
        return lambda: norm(x).detach()
    a, b = torch.ones(1), torch.ones(1)
    return lambda: torch.add(a, b)


def worker():
    if os.environ.get("BIAS_THP_OFF"):
        import ctypes
        ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
    import torch
    touch, fresh = bool(os.environ.get("BIAS_TOUCH")), bool(os.environ.get("BIAS_FRESH"))
    out = sys.stdout
    out.write(json.dumps({"hello": os.getpid(), "threads": torch.get_num_threads()}) + "\n")
    out.flush()
    fn, number, row = None, 1, None
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            return
        if req["op"] == "prepare":
            row = req["row"]
            fn = _make(torch, row, touch)
            fn()
            number = 1
            while True:
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                el = time.perf_counter() - t0
                if el >= 0.002:
                    break
                number *= 2
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.1:
                fn()
            reply = {"number": number, "anon_huge_kb": _anon_huge_kb()}
        else:
            if fresh:
                fn = _make(torch, row, False)
                fn()
            before = {tid: ut for tid, _, ut in _thread_cpus()}
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < req["warmup_s"]:
                fn()
            samples = []
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < req["block_s"]:
                s = time.perf_counter()
                for _ in range(number):
                    fn()
                samples.append((time.perf_counter() - s) / number)
            after = _thread_cpus()
            active = [(tid, cpu) for tid, cpu, ut in after if ut > before.get(tid, 0)]
            cpus = [cpu for _, cpu in active]
            reply = {"median": statistics.median(samples), "active": len(active),
                     "distinct": len(set(cpus)), "cpus": sorted(cpus)}
        out.write(json.dumps(reply) + "\n")
        out.flush()


# -- host -----------------------------------------------------------------------------

class W:
    def __init__(self, env):
        full = dict(os.environ, **env)
        self.p = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, env=full, text=True, bufsize=1)

    def hello(self):
        return json.loads(self.p.stdout.readline())

    def ask(self, **req):
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.write('{"op": "quit"}\n')
        self.p.stdin.flush()
        self.p.wait(timeout=30)


def _steal():
    with open("/proc/stat") as fh:
        parts = fh.readline().split()
    return int(parts[8]) if len(parts) > 8 else 0  # USER_HZ ticks


def run_pair(variant, pair, rounds, warmup_s=0.02, block_s=0.03, settle_s=0.01):
    env = VARIANTS[variant]
    sides = [W(env), W(env)]
    for s in sides:
        s.hello()
    if pair % 2:
        sides.reverse()      # mirror start roles over pairs
    result = {}
    for row in ROWS:
        preps = [s.ask(op="prepare", row=row) for s in sides]
        numbers = [p["number"] for p in preps]
        times = ([], [])
        info = ([], [])
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for i in order:
                other = sides[1 - i]
                if variant == "stop":
                    other.p.send_signal(signal.SIGSTOP)
                rep = sides[i].ask(op="run", warmup_s=warmup_s, block_s=block_s)
                if variant == "stop":
                    other.p.send_signal(signal.SIGCONT)
                times[i].append(rep["median"])
                info[i].append((rep["active"], rep["distinct"]))
                time.sleep(settle_s)
        ratio = statistics.median(times[1]) / statistics.median(times[0])
        # report as "first-started side" vs other regardless of mirroring
        result[row] = {"ratio": ratio if pair % 2 == 0 else 1 / ratio, "numbers": numbers,
                       "huge_kb": [p["anon_huge_kb"] for p in preps],
                       "median_s": [statistics.median(t) for t in times],
                       "collisions": [statistics.fmean(a - d for a, d in inf) for inf in info],
                       "active": [statistics.fmean(a for a, _ in inf) for inf in info]}
    for s in sides:
        s.close()
    return result


def host(out_path, pairs, rounds, variants, budget_s=float(os.environ.get("BIAS_BUDGET_S", 1e9))):
    t_start = time.monotonic()
    steal0 = _steal()
    data = {v: [] for v in variants}
    for pair in range(pairs):
        t_pair = time.monotonic()
        for variant in variants:          # variants interleaved: drift hits all alike
            data[variant].append(run_pair(variant, pair, rounds))
        elapsed = time.monotonic() - t_start
        print("pair %d done %.0f s" % (pair, elapsed), flush=True)
        with open(out_path, "w") as fh:
            json.dump(data, fh)
        if elapsed + (time.monotonic() - t_pair) > budget_s:
            print("budget reached after %d pairs" % (pair + 1))
            break
    data["_meta"] = {"wall_s": time.monotonic() - t_start, "steal_ticks": _steal() - steal0,
                     "pairs": pairs, "rounds": rounds, "cpus": os.cpu_count()}
    with open(out_path, "w") as fh:
        json.dump(data, fh, indent=1)
    summarise(data)


def summarise(data):
    print("%-8s %-10s %-40s %7s %7s %6s" % ("variant", "row", "pair ratios (A/B)", "spread",
                                             "sd_log", "coll"))
    for variant, results in data.items():
        if variant.startswith("_"):
            continue
        for row in ROWS:
            ratios = [p[row]["ratio"] for p in results]
            logs = [math.log(r) for r in ratios]
            coll = statistics.fmean(c for p in results for c in p[row]["collisions"])
            print("%-8s %-10s %-40s %6.1f%% %6.1f%% %6.2f" % (
                variant, row, " ".join("%.3f" % r for r in ratios),
                100 * (max(ratios) / min(ratios) - 1),
                100 * (statistics.stdev(logs) if len(logs) > 1 else 0), coll))
    print(json.dumps(data.get("_meta", {})))


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    elif "--summary" in sys.argv:
        with open(sys.argv[2]) as fh:
            summarise(json.load(fh))
    else:
        host(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5,
             int(sys.argv[3]) if len(sys.argv) > 3 else 6,
             sys.argv[4].split(",") if len(sys.argv) > 4 else list(VARIANTS))
