"""eb_torchperf.fleet.plan: jobs, batch scripts, manifest."""

import json
import shlex

import pytest

from eb_torchperf.errors import ConfigError, SchemaError
from eb_torchperf.fleet import plan
from eb_torchperf.fleet.slurm import JobState

AUDIT = plan.AuditSpec(launcher=("/sw/venv/bin/python", "-E", "-m", "eb_torchperf.cli"),
                       reference="/sw/wheel/bin/python", only=("matmul_fp32",), pairs=1)


def test_one_job_per_partition_named_after_it():
    jobs = plan.plan_jobs(["zen", "grace"], [], [])
    assert [(j.name, j.partition, j.target, j.kind) for j in jobs] == [
        ("zen", "zen", "python3", "python"), ("grace", "grace", "python3", "python")]


def test_several_targets_give_one_job_each_with_target_in_the_name():
    jobs = plan.plan_jobs(["zen"], ["/sw/torch/bin/python"], ["PyTorch/2.9.1-foss-2025a"])
    assert [(j.name, j.kind) for j in jobs] == [
        ("zen--sw-torch-bin-python", "python"), ("zen--PyTorch-2.9.1-foss-2025a", "module")]


@pytest.mark.parametrize("partitions, pythons, message", [
    ([], [], r"^give at least one --partition$"),
    (["zen", "zen"], [], r"^a --partition is given twice: zen, zen$"),
    (["zen"], ["/a/b", "/a-b"], r"^targets give the same job name \(zen--a-b\)")])
def test_bad_plans_are_config_errors(partitions, pythons, message):
    with pytest.raises(ConfigError, match=message):
        plan.plan_jobs(partitions, pythons, [])


def test_sbatch_options_in_slurm_terms_then_extra():
    options = plan.SbatchOptions(account="proj1", time="00:20:00", cpus_per_task=16,
                                 gres="gpu:1", constraint="zen4", extra=("--qos=debug",))
    assert options.directives() == ["--account=proj1", "--time=00:20:00", "--cpus-per-task=16",
                                    "--gres=gpu:1", "--constraint=zen4", "--qos=debug"]
    assert plan.SbatchOptions().directives() == []


def test_extra_sbatch_option_without_dash_is_refused():
    with pytest.raises(ConfigError, match=r"must start with '-': qos=debug \(give them after `--`"):
        plan.SbatchOptions(extra=("qos=debug",))


def test_batch_script_of_a_module_job():
    job = plan.FleetJob("grace", "grace", "PyTorch/2.9.1-foss-2025a", "module")
    script = plan.batch_script(job, "/shared/fleet", plan.SbatchOptions(time="10"), AUDIT)
    lines = script.splitlines()
    assert lines[:7] == ["#!/bin/bash -l", "#SBATCH --job-name=torchperf-grace",
                         "#SBATCH --partition=grace",
                         "#SBATCH --output=/shared/fleet/jobs/grace.out",
                         "#SBATCH --error=/shared/fleet/jobs/grace.err", "#SBATCH --time=10",
                         "# eb-torchperf fleet: audit of module PyTorch/2.9.1-foss-2025a on "
                         "partition grace"]
    assert lines[7:9] == ["set -eu", "module load PyTorch/2.9.1-foss-2025a"]
    command = shlex.split(script[script.index("/sw/venv"):].replace("\\\n", " "))
    assert command == ["/sw/venv/bin/python", "-E", "-m", "eb_torchperf.cli", "audit",
                       "--python", "python3", "--reference", "/sw/wheel/bin/python",
                       "--suite", "quick", "--timeout", "300", "--quiet", "--db", "off",
                       "--out", "/shared/fleet/results/grace.json",
                       "--only", "matmul_fp32", "--pairs", "1"]


def test_manifest_round_trip_and_moved_folder(tmp_path):
    job = plan.FleetJob("zen", "zen", "python3", job_id="12",
                        state=JobState("12", "COMPLETED", 0), note="")
    manifest = plan.FleetManifest("/old/place", plan.SbatchOptions(extra=("--mem=1G",)), AUDIT,
                                  (job,), "2026-11-30T12:00:00+00:00", 600.0)
    manifest = manifest.__class__(**{**manifest.__dict__, "directory": str(tmp_path)})
    manifest.save()
    loaded = plan.load_manifest(str(tmp_path))
    assert loaded == manifest
    assert json.loads((tmp_path / "fleet.json").read_text())["manifest_version"] == 1


def test_load_manifest_errors(tmp_path):
    with pytest.raises(SchemaError, match=r"fleet.json: .*\(is .* a fleet folder made by"):
        plan.load_manifest(str(tmp_path))
    (tmp_path / "fleet.json").write_text('{"manifest_version": 99}')
    with pytest.raises(SchemaError, match=r"manifest version 99 is not supported"):
        plan.load_manifest(str(tmp_path))


def test_default_launcher_runs_this_interpreter_isolated(monkeypatch):
    import sys
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert plan.default_launcher() == (sys.executable, "-E", "-m", "eb_torchperf.cli")


@pytest.mark.parametrize("name", ["../../etc/secret", "..", ".hidden", "a/b", ""])
def test_job_names_read_back_cannot_leave_the_fleet_folder(tmp_path, name):  # issue 27 #9
    job = plan.FleetJob("zen", "zen", "python3", job_id="12")
    manifest = plan.FleetManifest(str(tmp_path), plan.SbatchOptions(), AUDIT, (job,),
                                  "2026-11-30T12:00:00+00:00", 600.0)
    manifest.save()
    data = json.loads((tmp_path / "fleet.json").read_text())
    data["jobs"][0]["name"] = name  # an edited fleet.json
    (tmp_path / "fleet.json").write_text(json.dumps(data))
    with pytest.raises(SchemaError) as caught:
        plan.load_manifest(str(tmp_path))
    assert str(caught.value) == (
        "%s: jobs[0].name: expected a plain file name (no '/', not starting with '.'), got %r"
        % (tmp_path / "fleet.json", name))
