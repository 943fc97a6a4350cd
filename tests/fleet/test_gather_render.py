"""eb_torchperf.fleet.gather and .render on hand-built fleet folders."""

import pathlib

from rich.console import Console

from eb_torchperf.fleet import gather, render, slurm
from eb_torchperf.fleet.plan import FleetJob
from eb_torchperf.fleet.slurm import JobState

from .builders import audit_result, fleet_folder, finding, job

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "slurm"
SIGILL_MESSAGE = ("target /sw/torch/bin/python: worker killed by signal SIGILL while starting "
                  "(import torch) (no output on stderr)")


def test_ok_failed_and_unfinished_jobs(tmp_path):
    sigill = audit_result("Neoverse-V2", 1.0, complete=False,
                          errors=[{"side": "target", "message": SIGILL_MESSAGE}])
    manifest = fleet_folder(
        tmp_path, [job("zen", "COMPLETED", job_id="1"), job("grace", "FAILED", 2, job_id="2"),
                   job("gpu", "RUNNING", job_id="3")],
        results={"zen": audit_result("AMD EPYC 9654", 0.5), "grace": sigill},
        stderr={"grace": "eb-torchperf: error: %s\n" % SIGILL_MESSAGE})
    zen, grace, gpu = gather.gather(manifest)
    assert zen.status == "ok" and zen.cause == ""
    assert [round(c.relative_ops, 6) for c in zen.comparisons] == [0.5, 1.0]
    assert (zen.cpu_model, zen.gpus, zen.host) == ("AMD EPYC 9654", "none", "node-amd")
    assert grace.status == "failed"
    assert grace.cause == SIGILL_MESSAGE
    assert grace.stderr_tail == "eb-torchperf: error: " + SIGILL_MESSAGE
    assert gpu.status == "unfinished" and gpu.result is None


def test_cancelled_job_without_results_takes_cause_from_stderr(tmp_path):
    manifest = fleet_folder(tmp_path, [job("grace", "CANCELLED", job_id="7")],
                            stderr={"grace": (DATA / "stderr-cancelled.txt").read_text()})
    (outcome,) = gather.gather(manifest)
    assert outcome.status == "failed"
    assert outcome.cause == ("slurmstepd-vm: error: *** JOB 7 ON vm CANCELLED AT "
                             "2026-11-30T17:58:29 ***")


def test_job_killed_before_writing_anything(tmp_path):
    manifest = fleet_folder(tmp_path, [job("grace", "FAILED", 0, 4, job_id="8")])
    (outcome,) = gather.gather(manifest)
    assert outcome.cause == ("no results file (the audit did not start or was killed "
                             "before writing)")
    row = render.fleet_view(manifest, [outcome]).failed[0]
    assert row.state == "FAILED, killed by SIGILL (signal 4)"


def test_deadline_note_and_refused_submission(tmp_path):
    refused = FleetJob("gpu", "gpu", "python3", state=JobState(
        "", "NOT_SUBMITTED", reason="sbatch --parsable failed (exit 1): sbatch: error: invalid "
                                    "partition specified: gpu", source="sbatch"))
    note = "cancelled by eb-torchperf fleet: its deadline of 60 s passed (--deadline)"
    late = job("zen", "CANCELLED", job_id="9", note=note)
    manifest = fleet_folder(tmp_path, [late, refused])
    late_outcome, refused_outcome = gather.gather(manifest)
    assert late_outcome.cause.startswith("cancelled by eb-torchperf fleet: its deadline of 60 s")
    assert refused_outcome.status == "failed"
    assert refused_outcome.cause == ("not submitted: sbatch --parsable failed (exit 1): sbatch: "
                                     "error: invalid partition specified: gpu")
    assert render.fleet_view(manifest, [refused_outcome]).failed[0].state == "NOT_SUBMITTED"


def test_complete_results_make_a_job_ok_whatever_its_exit_status(tmp_path):
    manifest = fleet_folder(tmp_path, [job("zen", "FAILED", 1)],
                            results={"zen": audit_result("AMD EPYC 9654", 1.0)})
    assert gather.gather(manifest)[0].status == "ok"


def test_markdown_report_rows_findings_and_failures(tmp_path):
    manifest = fleet_folder(
        tmp_path, [job("zen", "COMPLETED", job_id="1"), job("gpu", "COMPLETED", job_id="2"),
                   job("grace", "FAILED", 2, job_id="3")],
        results={"zen": audit_result("AMD EPYC 9654", 0.5, findings=[finding()]),
                 "gpu": audit_result("Intel Xeon 8480+", 1.0, gpus=("NVIDIA H200",) * 2,
                                     findings=[finding("info", "cuda-wheel")]),
                 "grace": audit_result("Neoverse-V2", 1.0, complete=False, errors=[
                     {"message": SIGILL_MESSAGE}])},
        stderr={"grace": "eb-torchperf: error: boom\n"})
    text = render.render_markdown(render.fleet_view(manifest, gather.gather(manifest)))
    lines = text.splitlines()
    assert lines[2] == ("3 jobs (2 ok, 1 failed) · suite quick · reference /sw/wheel/bin/python "
                        "· submitted 2026-11-30T12:00:00+00:00 · folder %s" % tmp_path)
    table = lines[lines.index("| partition | target | node | CPU | GPU | matmul_fp32 | dispatch "
                              "| geomean |"):][:4]
    assert table[2:] == [
        "| zen | python3 | node-amd | AMD EPYC 9654 | none | 50.0 % \\* | 100.0 % | 70.7 % |",
        "| gpu | python3 | node-intel | Intel Xeon 8480+ | 2x NVIDIA H200 | 100.0 % | 100.0 % "
        "| 100.0 % |"]
    findings = lines[lines.index("## Findings per node type"):lines.index("## Failed jobs")]
    assert findings == ["## Findings per node type", "", "**zen** (AMD EPYC 9654):", "",
                        "- warning blas-not-mkl: BLAS is OpenBLAS, not MKL — build with imkl",
                        "", "**gpu** (Intel Xeon 8480+):", "",
                        "- info cuda-wheel: BLAS is OpenBLAS, not MKL — build with imkl", ""]
    assert lines[lines.index("## Failed jobs"):] == [
        "## Failed jobs", "", "| partition | target | job | Slurm state | cause |",
        "| --- | --- | --- | --- | --- |",
        "| grace | python3 | 3 | FAILED, exit 2 | %s |" % SIGILL_MESSAGE, "",
        "stderr of grace (job 3), last lines:", "", "```", "eb-torchperf: error: boom", "```"]


def test_findings_not_available_is_said(tmp_path):
    manifest = fleet_folder(tmp_path, [job("zen", "COMPLETED")],
                            results={"zen": audit_result("AMD EPYC 9654", 1.0)})
    outcomes = gather.gather(manifest)
    view = render.fleet_view(manifest, outcomes)
    if outcomes[0].findings_available:  # eb_torchperf.diagnosis.diagnose is installed: it diagnosed
        assert view.findings_note == ""
        assert view.findings[0].summary in ("", "none")
    else:
        assert view.findings_note.startswith("not available: this eb_torchperf has no "
                                             "eb_torchperf.diagnosis.diagnose module")
        assert "Findings: not available" in render.render_markdown(view)


def test_several_parameter_sets_get_their_own_columns(tmp_path):
    result = audit_result("AMD EPYC 9654", 1.0)
    from .builders import bench
    extra = (bench("thread_scaling", "target", 0.002, 1e9, "flop", {"threads": 1}),
             bench("thread_scaling", "reference", 0.001, 1e9, "flop", {"threads": 1}),
             bench("thread_scaling", "target", 0.001, 1e9, "flop", {"threads": "all"}),
             bench("thread_scaling", "reference", 0.001, 1e9, "flop", {"threads": "all"}))
    result = result.__class__(**{**result.__dict__, "results": result.results + extra})
    manifest = fleet_folder(tmp_path, [job("zen", "COMPLETED")], results={"zen": result})
    view = render.fleet_view(manifest, gather.gather(manifest))
    assert view.columns == ("matmul_fp32", "dispatch", "thread_scaling threads=1",
                            "thread_scaling threads=all")
    assert view.rows[0].cells == ("100.0 %", "100.0 %", "50.0 % *", "100.0 %")


def test_terminal_report_renders_the_same_rows(tmp_path):
    manifest = fleet_folder(
        tmp_path, [job("zen", "COMPLETED"), job("grace", "FAILED", 0, 4, job_id="8")],
        results={"zen": audit_result("AMD EPYC 9654", 0.5)})
    console = Console(width=200, record=True)
    console.print(render.render_terminal(render.fleet_view(manifest, gather.gather(manifest))))
    text = console.export_text()
    assert "│ zen       │ python3 │ node-amd │ AMD EPYC 9654 │ none │    50.0 % * │" in text
    assert "│ grace     │ python3 │ 8   │ FAILED, killed by SIGILL (signal 4) │" in text


def test_timeout_job_cause_from_sacct_and_stderr(tmp_path):
    state = slurm.parse_sacct((DATA / "sacct-timeout.txt").read_text())["6"]
    timed_out = FleetJob("zen", "zen", "python3", job_id="6", state=state)
    manifest = fleet_folder(tmp_path, [timed_out],
                            stderr={"zen": (DATA / "stderr-timeout.txt").read_text()})
    (outcome,) = gather.gather(manifest)
    assert outcome.cause == ("slurmstepd-vm: error: *** JOB 6 ON vm CANCELLED AT "
                             "2026-11-30T17:59:33 DUE TO TIME LIMIT ***")
    row = render.fleet_view(manifest, [outcome]).failed[0]
    assert (row.job_id, row.state) == ("6", "TIMEOUT, exit 0")


def test_fleet_fail_on(tmp_path, capsys):
    """--fail-on decides over the jobs' findings; a failed job fails (exit 2, an error, not a finding) whatever it says."""
    from eb_torchperf.cli.dispatch import main
    ok = fleet_folder(tmp_path / "ok", [job("zen", "COMPLETED")],
                      results={"zen": audit_result("AMD EPYC 9654", 1.0,
                                                   findings=[finding("warning")])})
    assert main(["fleet", "--render", ok.directory]) == 0
    assert main(["fleet", "--render", ok.directory, "--fail-on", "warning"]) == 1
    bad = fleet_folder(tmp_path / "bad", [job("zen", "FAILED", 2)])
    assert main(["fleet", "--render", bad.directory, "--fail-on", "never"]) == 2
    capsys.readouterr()
