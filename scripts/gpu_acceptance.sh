#!/usr/bin/env bash
# Acceptance runs of the GPU suite (issue 4) on one CUDA machine, same interpreter as
# target and reference.  Writes results JSON, terminal text and Markdown to DIR.
#   scripts/gpu_acceptance.sh DIR gpu      # parts 1-6 (~7 min on an H200)
#   scripts/gpu_acceptance.sh DIR added    # part 7   (~4 min on 16 cores)
# 1. first, on a cool GPU: the best cuBLAS GEMM figures measured apart
#    (scripts/cublas_best.py: burst and sustained)
# 2. normal vs normal, quick, --device cuda        (quick GPU wall time; no GPU finding)
# 3-4. target with PYTORCH_NO_CUDA_MEMORY_CACHING=1 / CUDA_LAUNCH_BLOCKING=1, quick
# 5. with 2+ GPUs: NCCL all-reduce, one process per GPU, 2 pairs
# 6. normal vs normal, full, --device cuda, 1 pair  (every GPU figure)
# 7. quick audit --device cpu, then --device all, twice each, alternating: the time
#    the GPU quick suite adds to an audit
set -uo pipefail
dir=${1:?give an output folder}
part=${2:-gpu}
py=${PYTHON:-python3}
mkdir -p "$dir"
audit() {
    local name=$1; shift
    local start=$SECONDS
    $py -m eb_torchperf.cli audit --python "$py" --reference "$py" --quiet \
        --out "$dir/$name.json" "$@" >"$dir/$name.txt" 2>&1
    echo "audit $name: exit $?, $((SECONDS - start)) s" | tee -a "$dir/summary.txt"
    $py -m eb_torchperf.cli gpu "$dir/$name.json" --markdown "$dir/$name.md" \
        --fail-on never >>"$dir/$name.txt" 2>&1
}
case $part in
gpu)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv \
        | tee -a "$dir/summary.txt"
    $py scripts/cublas_best.py >"$dir/cublas-best.json" 2>>"$dir/summary.txt"
    audit quick-normal --suite quick --device cuda
    audit quick-no-caching --suite quick --device cuda \
        --target-env PYTORCH_NO_CUDA_MEMORY_CACHING=1
    audit quick-launch-blocking --suite quick --device cuda --target-env CUDA_LAUNCH_BLOCKING=1
    if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
        audit allreduce --suite full --device cuda --only allreduce_nccl --pairs 2
    fi
    audit full-normal --suite full --device cuda --pairs 1
    ;;
added)
    for round in 1 2; do
        audit "quick-cpu-$round" --suite quick --device cpu
        audit "quick-all-$round" --suite quick --device all
    done
    ;;
*)
    echo "unknown part $part (gpu or added)" >&2
    exit 2
    ;;
esac
