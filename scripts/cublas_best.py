"""Best cuBLAS GEMM rate this machine reaches, as the yardstick for the suite's figures.

Measured apart from eb_torchperf, the plain way: torch.mm into a preallocated output,
10 warm-up calls, then REPS calls between two CUDA events, over several shapes, three
times each ("burst": the best TFLOP/s per dtype).  Then bf16 8192^3 under continuous
load for SUSTAIN_S seconds ("sustained": median of REPS-call runs), because an H200
at its power cap lowers its clock within a second of full load (seen: 1980 -> 1440 MHz
at ~690 W, throttle reason "SW power cap"), and an audit keeps the GPU loaded for
seconds.  nvidia-smi's clock, power and throttle reasons are recorded after that.

    python3 scripts/cublas_best.py > cublas-best.json
"""

import json
import sys

import torch

SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 16384, 4096),
          (16384, 16384, 16384), (12288, 12288, 12288))
DTYPES = {"bf16": (torch.bfloat16, False), "fp16": (torch.float16, False),
          "tf32": (torch.float32, True), "fp32": (torch.float32, False)}
REPS = 20
SUSTAIN_S = 3.0


def tflops(m, n, k, dtype, tf32):
    """TFLOP/s of torch.mm(m x k, k x n) over REPS back-to-back calls (CUDA events)."""
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    for _ in range(10):
        torch.mm(a, b, out=out)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(REPS):
        torch.mm(a, b, out=out)
    end.record()
    end.synchronize()
    return 2.0 * m * n * k * REPS / (start.elapsed_time(end) * 1e-3) / 1e12


def sustained(m=8192, n=8192, k=8192):
    """Median and first TFLOP/s of REPS-call runs of bf16 GEMM over SUSTAIN_S seconds."""
    import statistics
    import subprocess
    import time
    runs = []
    begin = time.perf_counter()
    while time.perf_counter() - begin < SUSTAIN_S:
        runs.append(tflops(m, n, k, torch.bfloat16, False))
    smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,"
                          "clocks_event_reasons.active", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    return {"dtype": "bf16", "m": m, "n": n, "k": k, "median_tflops": statistics.median(runs),
            "first_tflops": runs[0], "runs": len(runs), "nvidia_smi_after": smi}


def main():
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "runs": []}
    for name, (dtype, tf32) in DTYPES.items():
        shapes = SHAPES if name in ("bf16", "fp16") else SHAPES[:3]
        for m, n, k in shapes:
            best = max(tflops(m, n, k, dtype, tf32) for _ in range(3))
            results["runs"].append({"dtype": name, "m": m, "n": n, "k": k, "tflops": best})
            print(name, m, n, k, "%.1f" % best, file=sys.stderr)
    results["best_tflops"] = {name: max(r["tflops"] for r in results["runs"] if r["dtype"] == name)
                              for name in DTYPES}
    results["sustained"] = sustained()
    print("sustained", results["sustained"], file=sys.stderr)
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
