#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on loopback, for the results-database tests.
#
#   bash scripts/pg-up.sh     # as root on Debian 12; prints `export EB_TORCHPERF_TEST_PG_URL=...`
#   bash scripts/pg-down.sh   # stops it and removes its folder
#
# Debian's `postgresql` package (installed here when missing); the server runs as the
# `postgres` user, listens on 127.0.0.1 only, on a free port, with trust
# authentication for local connections, and keeps everything under $PG_TEST_DIR
# (default /tmp/eb-torchperf-pg).  Nothing is written to /etc; the package's own
# cluster is not started.
set -euo pipefail
D=${PG_TEST_DIR:-/tmp/eb-torchperf-pg}
die() { echo "pg-up: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "must run as root (the server runs as the postgres user)"
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql \
        >/dev/null || die "cannot install Debian's postgresql package"
fi
BIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -rf "$D" && mkdir -p "$D" && chown postgres: "$D"
runuser -u postgres -- "$BIN/initdb" -D "$D/data" -U postgres --auth=trust -E UTF8 \
    >"$D/initdb.log" 2>&1 || die "initdb failed: $(tail -3 "$D/initdb.log")"
runuser -u postgres -- "$BIN/pg_ctl" -D "$D/data" -l "$D/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $PORT -k $D -c max_connections=200 -c fsync=off" \
    start >/dev/null || die "server did not start: $(tail -3 "$D/server.log")"
echo "$PORT" >"$D/port"
echo "export EB_TORCHPERF_TEST_PG_URL=postgresql://postgres@127.0.0.1:$PORT/postgres"
