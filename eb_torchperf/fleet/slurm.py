"""Slurm through its own commands: `sbatch`, `sacct` (or `scontrol`), `scancel`.

Plain subprocess calls with timeouts, parsed output and one typed error
(`SlurmError`).  Not submitit: the job must run `eb-torchperf audit` as a readable
batch script (`--dry-run` prints it; a site admin can re-submit it by hand), not a
pickled Python call; pyslurm does not build against older Slurm releases.

Job states come from `sacct` when the cluster has accounting (slurmdbd), which keeps
the final state, exit code and signal of every job; without accounting, from
`scontrol show job`, which knows a job only until `MinJobAge` (default 300 s,
https://slurm.schedmd.com/slurm.conf.html#OPT_MinJobAge) after it ended.  A job
neither knows is reported as state "UNKNOWN" and counts as ended, so a poller never
waits forever for a job that died without a trace.
"""

import dataclasses
import signal
import subprocess
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from eb_torchperf.errors import SlurmError

#: Seconds one Slurm command may take; slurmctld answers in milliseconds when healthy.
COMMAND_TIMEOUT_S = 60.0
#: Job states after which a job does not run again, from squeue(1) "JOB STATE CODES"
#: (https://slurm.schedmd.com/squeue.html#SECTION_JOB-STATE-CODES); UNKNOWN is ours.
TERMINAL_STATES = frozenset({
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
    "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT", "UNKNOWN"})
#: sacct fields read, in this order (`sacct -e` lists them).
SACCT_FIELDS = ("JobIDRaw", "State", "ExitCode", "Elapsed", "NodeList", "Reason", "Partition")
#: What sacct prints when the cluster has no accounting storage.
NO_ACCOUNTING_TEXT = "accounting storage is disabled"
#: Reason values that add nothing to the state and exit status.
UNTOLD_REASONS = frozenset({"", "None", "(null)", "NonZeroExitCode"})
#: What scontrol prints for a job it no longer (or never) knew.
INVALID_JOB_TEXT = "Invalid job id"


@dataclasses.dataclass(frozen=True)
class JobState:
    """What Slurm says about one job.

    Attributes:
        job_id: Slurm job id.
        state: first word of Slurm's job state ("FAILED", "CANCELLED", ...); "UNKNOWN"
            when neither sacct nor scontrol has a record.
        exit_code: exit status of the batch script (None when not known).
        signal: number of the signal that ended the batch script, 0 for none.
        node: node list the job ran on.
        elapsed: run time as Slurm prints it ("00:01:02").
        reason: Slurm's reason field ("None", "JobLaunchFailure", ...).
        source: "sacct", "scontrol" or "none".
    """

    job_id: str
    state: str
    exit_code: Optional[int] = None
    signal: int = 0
    node: str = ""
    elapsed: str = ""
    reason: str = ""
    source: str = ""

    @property
    def terminal(self) -> bool:
        """True once the job cannot run any more."""
        return self.state in TERMINAL_STATES

    def describe(self) -> str:
        """One phrase: "FAILED, killed by SIGILL (signal 4)", "COMPLETED, exit 0"; exit
        status and signal only once the job has ended."""
        parts = [self.state]
        if not self.terminal:
            pass
        elif self.signal:
            parts.append("killed by %s (signal %d)" % (signal_name(self.signal), self.signal))
        elif self.exit_code is not None:
            parts.append(describe_exit(self.exit_code))
        if self.reason and self.reason not in UNTOLD_REASONS:
            parts.append("reason %s" % self.reason)
        return ", ".join(parts)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "JobState":
        return cls(**data)


def signal_name(number: int) -> str:
    """"SIGILL" for 4; "signal N" for a number this platform does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return "signal %d" % number


def describe_exit(code: int) -> str:
    """"exit 2"; a shell's 128+N is spelled out: "exit 132 (128+SIGILL)"."""
    if 128 < code < 128 + 65:
        return "exit %d (128+%s)" % (code, signal_name(code - 128))
    return "exit %d" % code


def parse_exit(text: str) -> Tuple[Optional[int], int]:
    """Slurm's "EXIT:SIGNAL" ("0:4") -> (exit code, signal); (None, 0) when unparsable."""
    code, _, sig = text.strip().partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return None, 0


def parse_sacct(text: str) -> Dict[str, JobState]:
    """Parse `sacct -X -n -P -o <SACCT_FIELDS>` output: one JobState per job id.

    Args:
        text: one line per job allocation, fields separated by "|".
    """
    states = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) < len(SACCT_FIELDS):
            continue
        row = dict(zip(SACCT_FIELDS, fields))
        code, sig = parse_exit(row["ExitCode"])
        states[row["JobIDRaw"]] = JobState(
            job_id=row["JobIDRaw"], state=(row["State"].split() or ["UNKNOWN"])[0],
            exit_code=code, signal=sig, node=row["NodeList"], elapsed=row["Elapsed"],
            reason=row["Reason"], source="sacct")
    return states


def parse_scontrol(text: str) -> Optional[JobState]:
    """Parse `scontrol show job -o ID` (one line of KEY=VALUE words); None if empty."""
    fields = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep and key not in fields:
            fields[key] = value
    if "JobId" not in fields:
        return None
    code, sig = parse_exit(fields.get("ExitCode", ""))
    return JobState(job_id=fields["JobId"], state=fields.get("JobState", "UNKNOWN"),
                    exit_code=code, signal=sig, node=fields.get("NodeList", ""),
                    elapsed=fields.get("RunTime", ""), reason=fields.get("Reason", ""),
                    source="scontrol")


def run_command(argv: Sequence[str], timeout_s: float = COMMAND_TIMEOUT_S) -> str:
    """Run a Slurm command and return its stdout.

    Raises:
        SlurmError: not found, timed out, or exit status != 0 (message has stderr's
            last line and says what to check).
    """
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError:
        raise SlurmError("%s not found: run eb-torchperf fleet on a host with the Slurm "
                         "client commands on PATH (a login node)" % argv[0], argv) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError("%s failed: %s (is slurmctld reachable? check `sinfo`)"
                         % (argv[0], exc), argv) from None
    if proc.returncode != 0:
        tail = proc.stderr.strip()
        last = (tail.splitlines() or ["no output on stderr"])[-1]
        raise SlurmError("%s failed (exit %d): %s" % (" ".join(argv[:2]), proc.returncode, last),
                         argv, proc.returncode, tail)
    return proc.stdout


def submit(script_path: str) -> str:
    """Submit a batch script with `sbatch --parsable`; returns the job id.

    Raises:
        SlurmError: sbatch refused it (bad partition, account, time...): its message.
    """
    out = run_command(["sbatch", "--parsable", script_path])
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError("sbatch printed %r, not a job id" % out.strip(), ["sbatch", script_path])
    return job_id


def cancel(job_ids: Iterable[str]) -> None:
    """`scancel` the jobs (no-op for none).

    Raises:
        SlurmError: scancel failed.
    """
    ids = list(job_ids)
    if ids:
        run_command(["scancel", *ids])


class StateQuery:
    """Job states through sacct, falling back to scontrol when there is no accounting.

    Args:
        use_sacct: None to try sacct first and remember whether it works.
    """

    def __init__(self, use_sacct: Optional[bool] = None):
        self.use_sacct = use_sacct

    def __call__(self, job_ids: Sequence[str]) -> Dict[str, JobState]:
        """One JobState per id; ids Slurm does not know (yet, or any more) are left out
        of sacct's answer and looked up with scontrol, then given state "UNKNOWN".

        Raises:
            SlurmError: sacct or scontrol failed for another reason than no accounting
                or an unknown job id.
        """
        states: Dict[str, JobState] = {}
        if self.use_sacct is not False and job_ids:
            states.update(self._sacct(job_ids))
        for job_id in job_ids:
            if job_id not in states:
                states[job_id] = self._scontrol(job_id)
        return states

    def _sacct(self, job_ids: Sequence[str]) -> Dict[str, JobState]:
        try:
            out = run_command(["sacct", "-X", "-n", "-P", "-o", ",".join(SACCT_FIELDS),
                               "-j", ",".join(job_ids)])
        except SlurmError as exc:
            if NO_ACCOUNTING_TEXT in (exc.stderr_tail or str(exc)):
                self.use_sacct = False
                return {}
            raise
        self.use_sacct = True
        return parse_sacct(out)

    @staticmethod
    def _scontrol(job_id: str) -> JobState:
        try:
            state = parse_scontrol(run_command(["scontrol", "show", "job", "-o", job_id]))
        except SlurmError as exc:
            if INVALID_JOB_TEXT not in (exc.stderr_tail or str(exc)):
                raise
            state = None
        return state or JobState(job_id, "UNKNOWN", reason="no record in sacct or scontrol",
                                 source="none")


def pending_ids(states: Dict[str, JobState]) -> List[str]:
    """Ids of the jobs that may still run."""
    return [job_id for job_id, state in states.items() if not state.terminal]
