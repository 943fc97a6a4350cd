"""Fixtures for the tests that need the throwaway Slurm cluster (scripts/slurm-up.sh).

They skip, saying how to start it, when no cluster answers; with
EB_TORCHPERF_REQUIRE_SLURM=1 (set by .ci/run) they fail instead, so CI cannot pass
by skipping them.
"""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

#: Where scripts/slurm-up.sh puts slurm.conf by default (SLURM_TEST_DIR).
DEFAULT_SLURM_CONF = "/tmp/eb-torchperf-slurm/etc/slurm.conf"
REQUIRE_ENV = "EB_TORCHPERF_REQUIRE_SLURM"
PARTITIONS = ("zen", "grace")
SINFO_TIMEOUT_S = 20


def _cluster_problem(conf):
    if not shutil.which("sbatch"):
        return "Slurm client commands are not installed"
    if not conf or not os.path.exists(conf):
        return "no Slurm test cluster (no %s)" % (conf or DEFAULT_SLURM_CONF)
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True,
                              timeout=SINFO_TIMEOUT_S, env=dict(os.environ, SLURM_CONF=conf))
    except subprocess.TimeoutExpired:
        return "the Slurm test cluster does not answer (sinfo timed out)"
    missing = set(PARTITIONS) - set(proc.stdout.split())
    if proc.returncode != 0 or missing:
        return "the Slurm test cluster is not up: sinfo: %s" % (
            proc.stderr.strip() or "partitions %s missing" % ", ".join(sorted(missing)))
    return None


@pytest.fixture(scope="session")
def slurm_conf():
    """SLURM_CONF of a running test cluster with partitions zen and grace (exported)."""
    conf = os.environ.get("SLURM_CONF") or DEFAULT_SLURM_CONF
    problem = _cluster_problem(conf)
    if problem:
        message = "%s: start it with `bash scripts/slurm-up.sh` (root, Debian 12)" % problem
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    previous = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    yield conf
    if previous is None:
        os.environ.pop("SLURM_CONF", None)
    else:
        os.environ["SLURM_CONF"] = previous


@pytest.fixture(scope="session")
def has_accounting(slurm_conf):
    """True when the test cluster has slurmdbd (sacct works)."""
    proc = subprocess.run(["sacct", "-n", "-X", "-j", "1"], capture_output=True, text=True,
                          timeout=SINFO_TIMEOUT_S)
    return proc.returncode == 0


@pytest.fixture(scope="session")
def torch_python():
    """This interpreter, when it has torch (the tests' target and reference)."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed in %s" % sys.executable)
    return sys.executable
