#!/usr/bin/env bash
# H200 acceptance for issues 15/16 (run on the device machine from the repo root):
# (c) fp32 math mode changed for the target only, (d) CUDA module loading changed for
# the target only, each with `explain` trials; then the wheel against itself, quick,
# --device all.  Usage: bash scripts/gpu_acceptance_round2.sh OUTDIR
set -u
out=${1:?usage: gpu_acceptance_round2.sh OUTDIR}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
run() {  # name seconds command...
    local name=$1 limit=$2; shift 2
    echo "=== $name $(date +%T)" >> "$out/log.txt"
    timeout "$limit" "$@" > "$out/$name.out" 2>&1
    echo "rc=$?" >> "$out/$name.out"
    grep -E "^(OK|WARNING|ERROR|FAIL|INCOMPLETE)|unexplained|caused by|trial|rc=|error" \
        "$out/$name.out" | head -20 >> "$out/log.txt"
}
p="python3 -m eb_torchperf.cli"
run c 60 $p audit --python python3 --reference python3 --device cuda --only gemm_cuda \
    --target-env NVIDIA_TF32_OVERRIDE=0 --out "$out/c.json" --format md --quiet
run cx 60 $p explain --results "$out/c.json" --no-profile --format md --quiet
run d 60 $p audit --python python3 --reference python3 --device cuda --only launch_cuda \
    --target-env CUDA_MODULE_LOADING=EAGER --out "$out/d.json" --format md --quiet
run dx 60 $p explain --results "$out/d.json" --no-profile --format md --quiet
[ "${AA:-1}" = 1 ] && run aa 170 $p audit --python python3 --reference python3 --allow-same-torch --device all \
    --out "$out/aa.json" --format md --quiet
echo "=== done $(date +%T)" >> "$out/log.txt"
