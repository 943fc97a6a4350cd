#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: set-up, a throwaway Slurm cluster on
# loopback for tests/fleet (root only; state under /tmp, stopped on exit), pytest (which
# ends with a per-area table: passed, skipped, failed, seconds).
# CI runs exactly this (.ci/run).  Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "$(id -u)" = 0 ]; then
    slurm_env=$(bash scripts/slurm-up.sh)
    eval "$slurm_env"
    trap 'bash scripts/slurm-down.sh' EXIT
    export EB_TORCHPERF_REQUIRE_SLURM=1
else
    echo "test: not root: no Slurm cluster; tests/fleet cluster tests will skip" >&2
fi
# results database tests: a throwaway PostgreSQL server (tests/store; SQLite needs none)
if [ "$(id -u)" = 0 ]; then
    eval "$(bash scripts/pg-up.sh)"
    trap 'bash scripts/pg-down.sh; bash scripts/slurm-down.sh' EXIT
else
    echo "test: not root: no PostgreSQL server; tests/store PostgreSQL cases will skip" >&2
fi
# EasyBuild in the tests (`eb`, and the Python its PythonPackage installs with) runs under
# the .venv's Python, never /usr/bin/python3 (whose site may fail `pip check`)
export EB_PYTHON="$PWD/.venv/bin/python"
.venv/bin/python -m pytest -q "$@"
