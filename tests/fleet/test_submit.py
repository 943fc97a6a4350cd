"""eb_torchperf.fleet.submit: submission records, polling, deadline (fake clock)."""

import json

import pytest

from eb_torchperf.errors import SlurmError
from eb_torchperf.fleet import submit
from eb_torchperf.fleet.plan import FleetJob
from eb_torchperf.fleet.slurm import JobState

from .builders import fleet_folder


class FakeSlurm:
    """Scripted job states per poll, a clock advanced only by sleep, scancel recorded."""

    def __init__(self, script):
        self.script = list(script)   # one {job_id: state} per poll; the last one repeats
        self.now = 0.0
        self.cancelled = []
        self.polls = 0

    def query(self, job_ids):
        states = self.script[min(self.polls, len(self.script) - 1)]
        self.polls += 1
        return {i: JobState(i, states[i], 0 if states[i] == "COMPLETED" else None)
                for i in job_ids}

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

    def cancel(self, job_ids):
        self.cancelled.append(list(job_ids))


def submitted(tmp_path, *ids):
    return fleet_folder(tmp_path, [FleetJob("p%s" % i, "p%s" % i, "python3", job_id=i)
                                   for i in ids])


def test_wait_polls_until_all_jobs_ended_and_saves_states(tmp_path):
    slurm = FakeSlurm([{"1": "PENDING", "2": "PENDING"}, {"1": "RUNNING", "2": "COMPLETED"},
                       {"1": "FAILED", "2": "COMPLETED"}])
    log = []
    manifest = submit.wait_jobs(submitted(tmp_path, "1", "2"), 600, slurm.query, 2.0,
                                slurm.clock, slurm.sleep, log.append, slurm.cancel)
    assert [j.state.state for j in manifest.jobs] == ["FAILED", "COMPLETED"]
    assert slurm.cancelled == [] and slurm.now == 4.0
    assert log == ["p1: job 1 PENDING", "p2: job 2 PENDING", "p1: job 1 RUNNING",
                   "p2: job 2 COMPLETED, exit 0", "p1: job 1 FAILED"]
    stored = json.loads((tmp_path / "fleet.json").read_text())
    assert [j["state"]["state"] for j in stored["jobs"]] == ["FAILED", "COMPLETED"]


def test_deadline_cancels_what_still_runs_and_notes_it(tmp_path):
    slurm = FakeSlurm([{"1": "RUNNING", "2": "COMPLETED"}] * 6 + [{"1": "CANCELLED",
                                                                   "2": "COMPLETED"}])
    manifest = submit.wait_jobs(submitted(tmp_path, "1", "2"), 10, slurm.query, 2.0,
                                slurm.clock, slurm.sleep, cancel=slurm.cancel)
    assert slurm.cancelled == [["1"]]
    first, second = manifest.jobs
    assert first.state.state == "CANCELLED"
    assert first.note == ("cancelled by eb-torchperf fleet: its deadline of 10 s passed "
                          "(--deadline)")
    assert second.note == ""


def test_submit_records_refused_jobs_and_goes_on(tmp_path):
    manifest = fleet_folder(tmp_path, [FleetJob("zen", "zen", "python3"),
                                       FleetJob("gpu", "gpu", "python3")])

    def fake_sbatch(script):
        if script.endswith("gpu.sbatch"):
            raise SlurmError("sbatch --parsable failed (exit 1): sbatch: error: invalid "
                             "partition specified: gpu")
        return "41"

    manifest = submit.submit_jobs(manifest, fake_sbatch)
    zen, gpu = manifest.jobs
    assert (zen.job_id, zen.state) == ("41", None)
    assert gpu.job_id is None and gpu.state.state == "NOT_SUBMITTED"
    assert gpu.state.reason.endswith("invalid partition specified: gpu")
    assert (tmp_path / "jobs" / "gpu.sbatch").read_text().startswith("#!/bin/bash\n")
    assert submit.unfinished(manifest) == [zen]


def test_submit_fails_when_every_job_is_refused(tmp_path):
    manifest = fleet_folder(tmp_path, [FleetJob("zen", "zen", "python3")])

    def refuse(script):
        raise SlurmError("sbatch --parsable failed (exit 1): sbatch: error: Invalid account")

    with pytest.raises(SlurmError, match=r"Invalid account$"):
        submit.submit_jobs(manifest, refuse)
