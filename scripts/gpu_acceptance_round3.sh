#!/usr/bin/env bash
# H200 acceptance, round 3 (issues 26, 29), run on the device machine from the repo root.
#   bash scripts/gpu_acceptance_round3.sh OUTDIR aa       three default A/A audits (--device
#                                                          all) and the target on core 0
#   bash scripts/gpu_acceptance_round3.sh OUTDIR aa-only  the three A/A audits alone
#   bash scripts/gpu_acceptance_round3.sh OUTDIR settings  two settings with no effect, and
#                                                          a 2-core stand-in A/A and core-0 case
# Each audit is the default CLI command; results JSON + Markdown per case, a log of the
# verdict lines in OUTDIR/log.txt.  Results database off (the device Python has no
# SQLAlchemy).
set -u
out=${1:?usage: gpu_acceptance_round3.sh OUTDIR aa|settings}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 EB_TORCHPERF_DB=off
run() {  # name seconds command...
    local name=$1 limit=$2; shift 2
    local start=$(date +%s)
    echo "=== $name $(date +%T)" >> "$out/log.txt"
    timeout "$limit" "$@" > "$out/$name.out" 2>&1
    echo "rc=$? wall=$(( $(date +%s) - start ))s" >> "$out/$name.out"
    grep -E "^(OK|WARNING|ERROR|FAIL|INCOMPLETE|UNDECIDED)|caused by|confirming|rc=" \
        "$out/$name.out" | cut -c1-400 | head -12 >> "$out/log.txt"
}
audit() {  # name seconds [extra arguments]
    local name=$1 limit=$2; shift 2
    run "$name" "$limit" python3 -m eb_torchperf.cli audit --reference python3 \
        --allow-same-torch --out "$out/$name.json" --format md --quiet "$@"
}
printf '#!/bin/sh\nexec taskset -c 0 python3 "$@"\n' > "$out/core0-python"
chmod +x "$out/core0-python"
case ${2:-aa} in
aa|aa-only)
    for i in 1 2 3; do audit "aa-$i" 170 --python python3 --device all; done
    [ "$2" = aa ] && audit core0 220 --python "$out/core0-python" --device all ;;
settings)
    audit device-order 170 --python python3 --device all --target-env CUDA_DEVICE_ORDER=PCI_BUS_ID
    audit kmp-blocktime 170 --python python3 --device all --target-env KMP_BLOCKTIME=0
    run two-core-aa 120 taskset -c 0,1 python3 -m eb_torchperf.cli audit --python python3 \
        --reference python3 --allow-same-torch --device cpu --out "$out/two-core-aa.json" \
        --format md --quiet ;;
esac
echo "=== done $(date +%T)" >> "$out/log.txt"
