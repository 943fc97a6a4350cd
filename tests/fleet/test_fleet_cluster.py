"""`eb-torchperf fleet` on the throwaway Slurm cluster (scripts/slurm-up.sh).

Tiny audits (`--only dispatch --pairs 1`, target = reference = this interpreter):
these tests check that jobs run, fail and are reported, not performance.
"""

import json
import os
import re
import subprocess

import pytest

from eb_torchperf.cli import dispatch as cli
from eb_torchperf.fleet import gather, submit
from eb_torchperf.fleet.plan import load_manifest

#: Lmod's shell set-up, read by the login shell of module jobs (Debian package lmod).
LMOD_INIT = "/etc/profile.d/lmod.sh"
TINY = ["--only", "dispatch", "--pairs", "1", "--cpus-per-task", "1", "--time", "10",
        "--deadline", "600", "--allow-same-torch"]


def fleet(target, reference, folder, *extra):
    argv = ["fleet", "-p", "zen", "-p", "grace", "--python", target, "--reference", reference,
            "-o", str(folder), *TINY, *extra]
    return cli.main(argv)


def table_rows(markdown):
    """{partition: cells} of the relative-OPS table of a fleet report."""
    lines = markdown.splitlines()
    start = lines.index("## Relative OPS per node type (reference = 100 %)") + 4
    rows = {}
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def test_two_partition_fleet_audit_has_both_rows(slurm_conf, torch_python, tmp_path, capsys):
    status = fleet(torch_python, torch_python, tmp_path / "fleet")
    outcomes = gather.gather(load_manifest(str(tmp_path / "fleet")))
    assert [(o.job.partition, o.status) for o in outcomes] == [("zen", "ok"), ("grace", "ok")]
    errors = any(f.severity == "error" for o in outcomes for f in o.findings)
    assert status == (1 if errors else 0)
    rows = table_rows((tmp_path / "fleet" / "fleet.md").read_text())
    assert sorted(rows) == ["grace", "zen"]
    for partition, cells in rows.items():
        assert cells[1] == torch_python
        # dispatch: a relative OPS (flags "*" / "~" escaped in Markdown: "147.3 % \*" on a
        # loaded machine), or "inconclusive" where one pair stays too wide
        assert re.fullmatch(r"\d+\.\d %( (\\?[*~])+)?|inconclusive", cells[5]), cells[5]
    assert all(o.job.state.state == "COMPLETED" for o in outcomes)
    assert "Relative OPS per node type" in capsys.readouterr().out


def test_sigill_on_one_partition_is_a_failed_row_with_its_cause(slurm_conf, torch_python,
                                                                tmp_path):
    target = tmp_path / "march-native-python"
    target.write_text("#!/bin/sh\n# a -march=native build: illegal instruction on grace\n"
                      '[ "${SLURM_JOB_PARTITION:-}" = grace ] && kill -ILL $$\n'
                      'exec %s "$@"\n' % torch_python)
    target.chmod(0o755)
    status = fleet(str(target), torch_python, tmp_path / "fleet")
    assert status == 2  # a failed job is an error, not a finding
    zen, grace = gather.gather(load_manifest(str(tmp_path / "fleet")))
    assert zen.status == "ok" and zen.comparisons[0].bench == "dispatch"
    assert grace.status == "failed"
    assert (grace.job.state.state, grace.job.state.exit_code) == ("FAILED", 2)
    assert grace.cause.startswith("target %s: worker killed by signal SIGILL while starting"
                                  % target)
    report = (tmp_path / "fleet" / "fleet.md").read_text()
    assert sorted(table_rows(report)) == ["zen"]
    assert "| grace | %s | %s | FAILED, exit 2 | target %s: worker killed by signal SIGILL" % (
        target, grace.job.job_id, target) in report


def test_cancelled_job_is_a_failed_row_and_render_rereads_the_folder(
        slurm_conf, torch_python, tmp_path):
    folder = tmp_path / "fleet"
    assert fleet(torch_python, torch_python, folder, "--no-wait") == 0
    manifest = load_manifest(str(folder))
    grace_id = [j.job_id for j in manifest.jobs if j.partition == "grace"][0]
    subprocess.run(["scancel", grace_id], check=True, timeout=60)
    submit.wait_jobs(manifest, 600)
    assert cli.main(["fleet", "--render", str(folder)]) == 2
    zen, grace = gather.gather(load_manifest(str(folder)))
    assert zen.status == "ok"
    assert (grace.status, grace.job.state.state) == ("failed", "CANCELLED")
    report = (folder / "fleet.md").read_text()
    assert sorted(table_rows(report)) == ["zen"]
    assert "| grace | %s | %s | CANCELLED" % (torch_python, grace_id) in report
    stored = json.loads((folder / "fleet.json").read_text())
    assert [j["state"]["state"] for j in stored["jobs"]] == ["COMPLETED", "CANCELLED"]


def test_dry_run_prints_scripts_and_submits_nothing(torch_python, tmp_path, capsys):
    status = cli.main(["fleet", "-p", "zen", "-p", "grace", "--reference", "none",
                       "-o", str(tmp_path / "fleet"), "--dry-run", "--", "--qos=debug"])
    out = capsys.readouterr().out
    assert status == 0
    assert out.count("#!/bin/bash") == 2
    assert "#SBATCH --partition=grace\n" in out and "#SBATCH --qos=debug\n" in out
    assert not (tmp_path / "fleet").exists()


def test_module_targets_loaded_in_the_job(slurm_conf, torch_python, tmp_path, monkeypatch):
    if not os.path.exists(LMOD_INIT):
        pytest.skip("Lmod is not installed (scripts/slurm-up.sh installs it)")
    modules = tmp_path / "modules" / "torchwheel"
    modules.mkdir(parents=True)
    (modules / "2.13.lua").write_text('prepend_path("PATH", "%s")\n'
                                      % os.path.dirname(torch_python))
    monkeypatch.setenv("MODULEPATH", str(tmp_path / "modules"))
    folder = tmp_path / "fleet"
    status = cli.main(["fleet", "-p", "zen", "--module", "torchwheel/2.13", "--module",
                       "nosuch/1.0", "--reference", torch_python, "-o", str(folder), *TINY])
    assert status == 2
    loaded, missing = gather.gather(load_manifest(str(folder)))
    assert (loaded.job.name, loaded.status) == ("zen--torchwheel-2.13", "ok")
    # python3 resolved in the job: the one the module put first on PATH
    assert loaded.result.target.python == os.path.join(os.path.dirname(torch_python), "python3")
    assert (missing.job.name, missing.status) == ("zen--nosuch-1.0", "failed")
    assert missing.job.state.exit_code == 1
    assert missing.cause == ('Lmod has detected the following error: The following module(s) '
                             'are unknown: "nosuch/1.0"')
