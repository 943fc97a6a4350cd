#!/usr/bin/env bash
# Stop the throwaway Slurm cluster of scripts/slurm-up.sh and remove its folder.
# Each daemon is ended by the pid in its own pid file under $SLURM_TEST_DIR.
set -uo pipefail
D=${SLURM_TEST_DIR:-/tmp/eb-torchperf-slurm}
[ -d "$D" ] || exit 0
for name in slurmd slurmctld slurmdbd mariadbd munged; do
    pidfile=$D/run/$name.pid
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
done
rm -rf "$D"
echo "slurm-down: stopped and removed $D" >&2
