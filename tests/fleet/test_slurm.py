"""eb_torchperf.fleet.slurm: parsing real sacct/scontrol output, state phrases, errors."""

import pathlib

import pytest

from eb_torchperf.errors import SlurmError
from eb_torchperf.fleet import slurm

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "slurm"


def test_parse_sacct_reads_state_exit_and_signal():
    states = slurm.parse_sacct((DATA / "sacct-4-jobs.txt").read_text())
    assert sorted(states) == ["1", "2", "3", "4"]
    assert states["1"] == slurm.JobState("1", "FAILED", 0, 4, "vm", "00:00:00", "None", "sacct")
    assert states["3"].state == "COMPLETED" and states["3"].elapsed == "00:00:06"
    assert (states["4"].state, states["4"].exit_code, states["4"].signal) == ("FAILED", 2, 0)
    assert all(s.terminal for s in states.values())


def test_parse_sacct_keeps_first_word_of_cancelled_by():
    state = slurm.parse_sacct((DATA / "sacct-cancelled.txt").read_text())["7"]
    assert state.state == "CANCELLED"
    assert state.describe() == "CANCELLED, exit 0"


def test_parse_scontrol_with_and_without_accounting():
    sigill = slurm.parse_scontrol((DATA / "scontrol-failed-sigill.txt").read_text())
    assert (sigill.job_id, sigill.state, sigill.exit_code, sigill.signal) == ("1", "FAILED", 0, 4)
    assert sigill.source == "scontrol" and sigill.node == "vm"
    assert sigill.describe() == "FAILED, killed by SIGILL (signal 4), reason JobLaunchFailure"
    exit2 = slurm.parse_scontrol((DATA / "scontrol-failed-exit2.txt").read_text())
    assert (exit2.state, exit2.exit_code, exit2.reason) == ("FAILED", 2, "NonZeroExitCode")
    assert exit2.describe() == "FAILED, exit 2"
    assert slurm.parse_scontrol("") is None


@pytest.mark.parametrize("text, expected", [
    ("0:4", (0, 4)), ("2:0", (2, 0)), ("132:0", (132, 0)), ("", (None, 0)), ("x:y", (None, 0))])
def test_parse_exit(text, expected):
    assert slurm.parse_exit(text) == expected


@pytest.mark.parametrize("code, text", [
    (0, "exit 0"), (2, "exit 2"), (128, "exit 128"), (132, "exit 132 (128+SIGILL)"),
    (137, "exit 137 (128+SIGKILL)"), (255, "exit 255")])
def test_describe_exit_spells_out_shell_signal_codes(code, text):
    assert slurm.describe_exit(code) == text


def test_describe_of_unfinished_job_has_no_exit_status():
    assert slurm.JobState("9", "PENDING", 0, 0, reason="Priority").describe() == \
        "PENDING, reason Priority"
    assert slurm.JobState("9", "RUNNING", 0).terminal is False
    assert slurm.JobState("9", "UNKNOWN").terminal is True


def test_job_state_json_round_trip():
    state = slurm.JobState("5", "TIMEOUT", 0, 15, "n1", "00:01:30", "TimeLimit", "sacct")
    assert slurm.JobState.from_json(state.to_json()) == state


def test_run_command_names_missing_command():
    with pytest.raises(SlurmError, match=r"^sbatch-that-is-not-installed not found: run "
                                         r"eb-torchperf fleet on a host with the Slurm"):
        slurm.run_command(["sbatch-that-is-not-installed", "--parsable"])


def test_run_command_failure_carries_exit_code_and_stderr():
    with pytest.raises(SlurmError, match=r"^sh -c failed \(exit 3\): no such partition$") as info:
        slurm.run_command(["sh", "-c", "echo first >&2; echo no such partition >&2; exit 3"])
    assert info.value.exit_code == 3
    assert info.value.stderr_tail == "first\nno such partition"
