"""Submit a fleet's jobs, then wait for them with a deadline.

The manifest is saved after every change, so an interrupted `eb-torchperf fleet`
leaves a fleet folder that `eb-torchperf fleet --render DIR` can finish reading.
"""

import dataclasses
import os
import time
from typing import Callable, Dict, List, Optional

from eb_torchperf.errors import SlurmError
from eb_torchperf.records import safe_write
from eb_torchperf.fleet import slurm
from eb_torchperf.fleet.plan import FleetJob, FleetManifest, batch_script, job_paths

#: Seconds between two state queries; one sacct call costs slurmdbd a few ms.
POLL_S = 2.0
#: After the deadline the fleet cancels what still runs and waits this long for Slurm
#: to record the cancellation: KillWait (default 30 s,
#: https://slurm.schedmd.com/slurm.conf.html#OPT_KillWait) plus the epilog.
CANCEL_GRACE_S = 60.0
#: JobState.state of a job sbatch refused (not a Slurm state).
NOT_SUBMITTED = "NOT_SUBMITTED"


def write_scripts(manifest: FleetManifest) -> Dict[str, str]:
    """Write every job's batch script under DIR/jobs; returns name -> script path."""
    os.makedirs(os.path.join(manifest.directory, "jobs"), exist_ok=True)
    os.makedirs(os.path.join(manifest.directory, "results"), exist_ok=True)
    scripts = {}
    for job in manifest.jobs:
        path = job_paths(manifest.directory, job.name)["script"]
        safe_write.write_text(path, batch_script(job, manifest.directory, manifest.sbatch,
                                                 manifest.audit))
        scripts[job.name] = path
    return scripts


def submit_jobs(manifest: FleetManifest, submit: Callable[[str], str] = slurm.submit,
                log: Callable[[str], None] = lambda msg: None) -> FleetManifest:
    """Write the scripts and sbatch each job; a refused job is recorded, not fatal.

    Returns:
        the manifest with job ids (and state NOT_SUBMITTED with sbatch's message as
        reason for refused jobs), saved to DIR/fleet.json.

    Raises:
        SlurmError: sbatch refused every job (the first refusal's error).
    """
    scripts = write_scripts(manifest)
    jobs, first_error = [], None
    for job in manifest.jobs:
        try:
            job = dataclasses.replace(job, job_id=submit(scripts[job.name]))
            log("%s: submitted job %s" % (job.name, job.job_id))
        except SlurmError as exc:
            first_error = first_error or exc
            job = dataclasses.replace(job, state=slurm.JobState(
                "", NOT_SUBMITTED, reason=str(exc), source="sbatch"))
            log("%s: not submitted: %s" % (job.name, exc))
        jobs.append(job)
        manifest = manifest.with_jobs(jobs + list(manifest.jobs[len(jobs):]))
        manifest.save()
    if all(job.job_id is None for job in jobs) and first_error is not None:
        raise first_error
    return manifest


def unfinished(manifest: FleetManifest) -> List[FleetJob]:
    """Submitted jobs whose last known state is not terminal."""
    return [job for job in manifest.jobs
            if job.job_id and not (job.state and job.state.terminal)]


def refresh_states(manifest: FleetManifest, query: Callable = None,
                   log: Callable[[str], None] = lambda msg: None) -> FleetManifest:
    """Ask Slurm once for the state of every unfinished job; log the changes.

    Raises:
        SlurmError: the state query failed.
    """
    query = query or slurm.StateQuery()
    pending = unfinished(manifest)
    if not pending:
        return manifest
    states = query([job.job_id for job in pending])
    jobs = []
    for job in manifest.jobs:
        state = states.get(job.job_id) if job.job_id else None
        if state is not None and state != job.state:
            if job.state is None or state.state != job.state.state:
                log("%s: job %s %s" % (job.name, job.job_id, state.describe()))
            job = dataclasses.replace(job, state=state)
        jobs.append(job)
    return manifest.with_jobs(jobs)


def wait_jobs(manifest: FleetManifest, deadline_s: float, query: Optional[Callable] = None,
              poll_s: float = POLL_S, clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep,
              log: Callable[[str], None] = lambda msg: None,
              cancel: Callable = slurm.cancel) -> FleetManifest:
    """Poll until every job has ended; at the deadline, cancel what still runs.

    Args:
        deadline_s: seconds from now after which unfinished jobs are cancelled.
        query: job ids -> {id: JobState} (default: slurm.StateQuery()).
        poll_s, clock, sleep: polling interval and the time functions (tests pass fakes).
        cancel: job ids -> None, called at the deadline (default: scancel).

    Returns:
        the manifest with final states (saved after every change).

    Raises:
        SlurmError: a state query or scancel failed.
    """
    query = query or slurm.StateQuery()
    end = clock() + deadline_s
    while True:
        manifest = refresh_states(manifest, query, log)
        manifest.save()
        if not unfinished(manifest):
            return manifest
        if clock() >= end:
            cancel([job.job_id for job in unfinished(manifest)])
            return _after_cancel(manifest, deadline_s, query, poll_s, clock, sleep, log)
        sleep(poll_s)


def _after_cancel(manifest, deadline_s, query, poll_s, clock, sleep, log):
    """Wait up to CANCEL_GRACE_S for the cancelled jobs' final states; note why they ended."""
    pending = unfinished(manifest)
    log("deadline of %g s passed: cancelled %s" % (
        deadline_s, ", ".join("%s (job %s)" % (j.name, j.job_id) for j in pending)))
    end = clock() + CANCEL_GRACE_S
    while unfinished(manifest) and clock() < end:
        sleep(poll_s)
        manifest = refresh_states(manifest, query, log)
    note = "cancelled by eb-torchperf fleet: its deadline of %g s passed (--deadline)" % deadline_s
    cancelled = {job.job_id for job in pending}
    manifest = manifest.with_jobs([dataclasses.replace(job, note=note)
                                   if job.job_id in cancelled else job for job in manifest.jobs])
    manifest.save()
    return manifest
