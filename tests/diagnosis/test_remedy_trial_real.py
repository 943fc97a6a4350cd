"""A real remedy trial: Debian's torch 1.13 with OpenBLAS first on LD_LIBRARY_PATH.

Asserts what the child process loaded (its probe's mapped libraries), never a timing.
The system's libblas.so.3 alternative is left as it is (the reference BLAS).
"""

import os

import pytest

from eb_torchperf.measure.interleave import AuditRun, RunnerOptions
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.explain_stage.remedies import discover_host
from eb_torchperf.measure.runner import run_probe
from eb_torchperf.diagnosis.facts import mapped, plain_libblas, usable_cores
from eb_torchperf.analysis.compare import compare
from eb_torchperf.explain_stage.trials import plan_trials, summarize_trial


LIBDIR = "/usr/lib/x86_64-linux-gnu"
OPENBLAS_DIR = LIBDIR + "/openblas-pthread"
#: One short round of one benchmark: enough to start both workers and measure once.
TINY = RunnerOptions(pairs=1, block_s=0.01, warmup_s=0.0, settle_s=0.0, min_rounds=1,
                     max_rounds=1, bench_budget_s=0.01, min_sample_s=0.001)


@pytest.fixture(scope="module")
def debian_probe(debian_python):
    if not os.path.exists(OPENBLAS_DIR + "/libblas.so.3"):
        pytest.skip("needs Debian's libopenblas0-pthread (apt-get install libopenblas0-pthread)")
    probe = ProbeResult.from_facts("target", debian_python, run_probe(debian_python))
    loaded = plain_libblas(probe)
    if loaded is None or loaded.startswith(OPENBLAS_DIR):
        pytest.skip("the libblas.so.3 alternative is not the reference BLAS (scripts/setup.sh "
                    "sets it; see update-alternatives --display libblas.so.3-x86_64-linux-gnu)")
    return probe


def trial_for(probe, label_part, combined=False):
    trials, _ = plan_trials(probe, discover_host(probe), measured=["matmul_fp32"])
    return next(t for t in trials if label_part in t.label and
                (len(t.remedy_ids) > 1) == combined)


def test_openblas_provider_is_loaded_in_the_child(debian_probe, wheel_python):
    loaded = plain_libblas(debian_probe)
    trial = trial_for(debian_probe, "openblas-pthread/")
    assert trial.env == {"LD_LIBRARY_PATH": os.pathsep.join(
        p for p in (OPENBLAS_DIR, os.environ.get("LD_LIBRARY_PATH")) if p)}
    audit = AuditRun(debian_probe.python, wheel_python, "quick", TINY, only=list(trial.benches),
                     target_env=trial.env).run()
    assert audit.complete and audit.errors == ()
    assert plain_libblas(audit.target).startswith(OPENBLAS_DIR + "/")
    assert loaded not in mapped(audit.target)
    assert plain_libblas(audit.reference) is None  # the wheel's MKL is linked in statically
    assert {(r.bench, r.side) for r in audit.results} == {("matmul_fp32", "target"),
                                                          ("matmul_fp32", "reference")}
    result = summarize_trial(trial, [], audit, compare(audit))
    assert result.applied
    assert result.effect.startswith("BLAS mapped: " + OPENBLAS_DIR + "/")
    assert result.rows[0].before is None and result.rows[0].after > 0
    assert os.path.realpath(LIBDIR + "/libblas.so.3") == loaded  # the system is unchanged


def test_combined_remedies_all_take_effect(debian_probe, wheel_python):
    cores = usable_cores(debian_probe)
    if cores < 2:
        pytest.skip("one allowed core: Debian's 1 thread is not below the cores")
    trial = trial_for(debian_probe, "OMP_NUM_THREADS", combined=True)
    audit = AuditRun(debian_probe.python, wheel_python, "quick", TINY, only=list(trial.benches),
                     target_env=trial.env).run()
    result = summarize_trial(trial, [], audit, compare(audit))
    assert result.applied, result.effect
    assert "intra-op threads: %d" % cores in result.effect
    assert debian_probe.fact("torch", "intra_op_threads") == 1
