"""The shipped ReFrame check, run by ReFrame itself: local scheduler, Slurm partition,
and an impossible reference that must make ReFrame fail.

Needs reframe-hpc in this environment (the `test` extra installs it); the Slurm run
needs the throwaway cluster (scripts/slurm-up.sh).
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from eb_torchperf.reframe import CHECK_PATH

SETTINGS = pathlib.Path(__file__).with_name("reframe_settings.py")
#: ReFrame starts, runs a ~5 s audit and polls the scheduler; generous, not a threshold.
REFRAME_TIMEOUT_S = 600
SITE_CHECK = '''
import reframe as rfm
from eb_torchperf.reframe.torchperf_check import TorchPerfCheck


@rfm.simple_test
class ImpossibleTorchPerf(TorchPerfCheck):
    reference = {"*": {"dispatch_target": (1000.0, -0.01, 0.01, "µs/op")}}
'''


@pytest.fixture(scope="module")
def reframe():
    """The reframe command next to this interpreter."""
    command = shutil.which("reframe", path=os.path.dirname(sys.executable)) or \
        shutil.which("reframe")
    if command is None:
        pytest.skip("reframe-hpc is not installed (pip install reframe-hpc)")
    return command


def run_reframe(reframe, check, system, prefix, python, extra_env=None, reference=None):
    argv = [reframe, "-C", str(SETTINGS), "--system", system, "-c", str(check), "-r",
            "--prefix", str(prefix), "--keep-stage-files", "-S", "target_python=%s" % python,
            "-S", "reference_python=%s" % (reference or python), "-S", "only=dispatch",
            "-S", "allow_same_torch=%s" % ("false" if reference else "true"),
            "-S", "pairs=1", "-S", "num_cpus_per_task=1"]
    env = dict(os.environ, **(extra_env or {}))
    return subprocess.run(argv, capture_output=True, text=True, timeout=REFRAME_TIMEOUT_S,
                          env=env, cwd=str(prefix))


def perflog(prefix, partition):
    """{column: value} of the single record of the check's perflog on `partition`."""
    path = pathlib.Path(prefix) / "perflogs" / "torchperf" / partition / "TorchPerfCheck.log"
    header, record = path.read_text().splitlines()[:2]
    return dict(zip(header.split("|"), record.split("|")))


def test_check_passes_on_the_local_scheduler(reframe, torch_python, tmp_path):
    proc = run_reframe(reframe, CHECK_PATH, "torchperf:local", tmp_path, torch_python)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "PASSED" in proc.stdout
    record = perflog(tmp_path, "local")
    assert record["result"] == "pass"
    assert record["dispatch_target_unit"] == "µs/op" and float(record["dispatch_target_value"]) > 0
    # One pair on a shared machine can leave the row inconclusive (issue 16): then it has
    # no relative-OPS variable (and no geomean), as in every other output.
    results = next(tmp_path.rglob("TorchPerfCheck/torchperf.json"))
    row = json.loads(results.read_text())["analysis"]["rows"][0]
    if row["inconclusive"]:
        assert "dispatch_unit" not in record and "geomean_unit" not in record
    else:
        assert (record["dispatch_unit"], record["geomean_unit"]) == ("x", "x")
        assert float(record["dispatch_value"]) == pytest.approx(row["relative_ops"], rel=1e-3)


def test_check_passes_on_a_slurm_partition(reframe, slurm_conf, has_accounting, torch_python,
                                           tmp_path):
    scheduler = "slurm" if has_accounting else "squeue"
    proc = run_reframe(reframe, CHECK_PATH, "torchperf:zen", tmp_path, torch_python,
                       {"TORCHPERF_RFM_SCHEDULER": scheduler})
    assert proc.returncode == 0, proc.stdout[-3000:]
    record = perflog(tmp_path, "zen")
    assert (record["result"], record["partition"]) == ("pass", "zen")
    assert record["job_nodelist"] != "" and record["dispatch_target_unit"] == "µs/op"
    script = next(tmp_path.glob("output/torchperf/zen/*/TorchPerfCheck/rfm_job.sh")).read_text()
    assert "#SBATCH --partition=zen" in script


def test_impossible_reference_makes_reframe_fail(reframe, torch_python, tmp_path):
    site_check = tmp_path / "site_check.py"
    site_check.write_text(SITE_CHECK)
    proc = run_reframe(reframe, site_check, "torchperf:local", tmp_path, torch_python)
    assert proc.returncode != 0
    assert "Failing phase: performance" in proc.stdout
    # the absolute rate, not relative OPS: that one is left out when a one-pair row on a
    # shared machine is inconclusive (issue 16), and a missing variable is not checked
    assert "failed to meet reference(s): dispatch_target=" in proc.stdout
    assert "µs/op, expected 1000.0 (l=990.0, u=1010.0)" in proc.stdout
    path = tmp_path / "perflogs" / "torchperf" / "local" / "ImpossibleTorchPerf.log"
    header, record = path.read_text().splitlines()[:2]
    fields = dict(zip(header.split("|"), record.split("|")))
    assert (fields["result"], fields["dispatch_target_ref"]) == ("fail", "1000.0")


def test_crashing_target_fails_sanity_with_the_audit_error(reframe, torch_python, tmp_path):
    target = tmp_path / "march-native-python"
    target.write_text("#!/bin/sh\nkill -ILL $$\n")
    target.chmod(0o755)
    proc = run_reframe(reframe, CHECK_PATH, "torchperf:local", tmp_path, str(target),
                       reference=torch_python)
    assert proc.returncode != 0
    assert "Failing phase: sanity" in proc.stdout
    assert ("the audit was cut short: target %s: worker killed by signal SIGILL while starting"
            % target) in proc.stdout
