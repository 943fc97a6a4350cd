#!/usr/bin/env bash
# Stop the throwaway PostgreSQL server of scripts/pg-up.sh and remove its folder.
set -uo pipefail
D=${PG_TEST_DIR:-/tmp/eb-torchperf-pg}
[ -d "$D/data" ] || exit 0
BIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -1)")
runuser -u postgres -- "$BIN/pg_ctl" -D "$D/data" -m fast -w stop >/dev/null 2>&1
rm -rf "$D"
echo "pg-down: stopped and removed $D" >&2
