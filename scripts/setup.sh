#!/usr/bin/env bash
# Set up eb_torchperf on a fresh Debian 12 machine (idempotent; run from anywhere).
#  - chromium, for the test that opens the HTML report in a headless browser.
#  - postgresql, for the results-database tests (scripts/pg-up.sh starts a throwaway
#    server under /tmp; the package's own cluster is not used).
#  - Debian's python3-torch (a real source build of PyTorch 1.13 against system BLAS):
#    the build the README's main job audits.  Its libblas.so.3 alternative is set to
#    the reference BLAS (what python3-torch gets when nothing else provides it), and the
#    script prints that line and the undo when it changes it; the OpenBLAS provider is
#    installed beside it for run-time remedy trials.
#  - .venv: eb_torchperf with its test and EasyBuild extras, plus the upstream
#    torch==2.13.0 CPU wheel (used by the tests as a second, real torch).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# Selects the reference BLAS system-wide (the audit's "slow BLAS" case); says so once, with the undo.
set_blas_alternatives() {
    local arch=$1 lib changed=""
    for lib in blas lapack; do
        local name="lib$lib.so.3-$arch" want="/usr/lib/$arch/$lib/lib$lib.so.3"
        [ "$(update-alternatives --query "$name" | sed -n 's/^Value: //p')" = "$want" ] && continue
        update-alternatives --quiet --set "$name" "$want"
        changed="$changed update-alternatives --auto $name;"
    done
    [ -z "$changed" ] || echo "setup: set the system libblas.so.3/liblapack.so.3 to the reference BLAS;" \
        "undo with:$changed" >&2
}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing Debian packages (python3-torch, BLAS providers, Lmod, python3-venv)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends python3-torch python3-torchvision libblas3 liblapack3 \
        libopenblas0-pthread chromium lmod postgresql bubblewrap gcc libc6-dev python3-venv >/dev/null
    arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
    set_blas_alternatives "$arch"
else
    echo "setup: not root or no apt-get: skipping Debian packages (tests that need them skip)" >&2
fi

if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
echo "setup: installing eb_torchperf into .venv" >&2
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,easybuild]' 'torch==2.13.0' 'torchvision==0.28.0'
echo "setup: done" >&2
