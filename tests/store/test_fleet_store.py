"""A fleet job's results are stored when the fleet is gathered, under its partition."""

from store_documents import variant, write
from eb_torchperf.fleet.gather import outcome_of
from eb_torchperf.fleet.plan import FleetJob, job_paths
from eb_torchperf.store import engine as engines
from eb_torchperf.store.query import history


def test_gathering_stores_each_ok_job_once(tmp_path, monkeypatch):
    monkeypatch.setenv("EB_TORCHPERF_DB", str(tmp_path / "db.sqlite"))
    job = FleetJob(name="zen--PyTorch", partition="zen", target="PyTorch/2.1.2-foss-2023a",
                   kind="module")
    write(tmp_path / job_paths(str(tmp_path), job.name)["results"],
          variant("2026-01-01T00:00:00+00:00"))
    first = outcome_of(job, str(tmp_path))
    again = outcome_of(job, str(tmp_path))
    assert first.status == "ok" and first.stored.startswith("stored as audit 1 in sqlite:///")
    assert again.stored.endswith("(already there)")
    (audit,) = history(engines.opened("sqlite:///%s" % (tmp_path / "db.sqlite")))
    assert (audit.node_type, audit.build, audit.source) == (
        "zen", "PyTorch/2.1.2-foss-2023a", "fleet")


def test_fleet_render_stores_in_the_db_option(tmp_path, capsys):
    """`fleet --db PATH` (issue 31): gathering stores there, whatever EB_TORCHPERF_DB
    says (off in the tests)."""
    from eb_torchperf.cli import dispatch as cli
    from eb_torchperf.fleet.plan import AuditSpec, FleetManifest, SbatchOptions
    from eb_torchperf.fleet.slurm import JobState
    job = FleetJob(name="grace", partition="grace", target="/opt/torch/bin/python",
                   job_id="7", state=JobState("7", "COMPLETED", 0))
    FleetManifest(str(tmp_path), SbatchOptions(), AuditSpec(launcher=("python3",),
                                                            reference=None), (job,)).save()
    write(tmp_path / job_paths(str(tmp_path), "grace")["results"],
          variant("2026-01-01T00:00:00+00:00"))
    database = tmp_path / "fleet.sqlite"
    cli.main(["fleet", "--render", str(tmp_path), "--db", str(database)])
    url = "sqlite:///%s" % database
    assert "stored as audit 1 in %s" % url in capsys.readouterr().out.splitlines()
    (audit,) = history(engines.opened(url))
    assert (audit.node_type, audit.source, audit.build) == (
        "grace", "fleet", "torch 1.13.0a0 @ /opt/torch/bin/python")
