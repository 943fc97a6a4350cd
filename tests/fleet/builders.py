"""Hand-built audit results and fleet folders for the fleet tests."""

import os

from eb_torchperf.fleet import plan
from eb_torchperf.fleet.slurm import JobState
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import AuditResult, BenchResult, ProbeResult

AUDIT = plan.AuditSpec(launcher=("python3", "-E", "-m", "eb_torchperf.cli"),
                       reference="/sw/wheel/bin/python", only=("matmul_fp32", "dispatch"), pairs=1)


def probe(label, cpu_model, gpus=()):
    """A ProbeResult with the CPU and GPU facts the fleet report shows."""
    facts = {"cpu": {"model": cpu_model},
             "gpu": {"available": bool(gpus), "devices": [{"name": g} for g in gpus]}}
    return ProbeResult.from_facts(label, "/sw/%s/bin/python" % label, facts)


def bench(name, side, seconds, work, unit, params=None, rounds=3):
    """One BenchResult of pair 0 whose every sample takes `seconds`."""
    return BenchResult(bench=name, params=params or {}, side=side, pair=0, number_per_run=1,
                       blocks_s=((seconds,) * 3,) * rounds, work=work, work_unit=unit)


def audit_result(cpu_model, matmul_ratio, gpus=(), findings=(), complete=True, errors=()):
    """An audit where the target's matmul_fp32 runs at `matmul_ratio` of the reference's
    throughput and dispatch at the same speed (times exact, so relative OPS is exact)."""
    results = (
        bench("matmul_fp32", "target", 0.001 / matmul_ratio, 2e9, "flop", {"n": 1000}),
        bench("matmul_fp32", "reference", 0.001, 2e9, "flop", {"n": 1000}),
        bench("dispatch", "target", 2e-6, 1, "op", {"numel": 1}),
        bench("dispatch", "reference", 2e-6, 1, "op", {"numel": 1}))
    return AuditResult(suite="quick", options={}, target=probe("target", cpu_model, gpus),
                       reference=probe("reference", cpu_model), results=results if complete
                       else (), complete=complete, errors=tuple(errors),
                       findings=tuple(findings), host="node-" + cpu_model.split()[0].lower())


def finding(severity="warning", rule_id="blas-not-mkl"):
    return Finding(rule_id, severity, "BLAS is OpenBLAS, not MKL", {"BLAS_INFO": "open"},
                   "build with imkl", "https://github.com/easybuilders/easybuild/issues/931")


def fleet_folder(tmp_path, jobs, results=None, stderr=None):
    """Write a fleet folder: manifest with `jobs`, results {name: AuditResult},
    stderr {name: text}.  Returns the saved FleetManifest."""
    manifest = plan.FleetManifest(str(tmp_path), plan.SbatchOptions(), AUDIT, tuple(jobs),
                                  "2026-11-30T12:00:00+00:00", 600.0)
    manifest.save()
    for name, result in (results or {}).items():
        result.save(plan.job_paths(str(tmp_path), name)["results"])
    for name, text in (stderr or {}).items():
        path = plan.job_paths(str(tmp_path), name)["stderr"]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    return manifest


def job(name, state, exit_code=0, signal=0, job_id="7", note=""):
    """A submitted FleetJob on partition `name` with a final Slurm state."""
    return plan.FleetJob(name, name, "python3", job_id=job_id, note=note,
                         state=JobState(job_id, state, exit_code, signal, "n1", "00:00:09",
                                        "None", "sacct") if state else None)
