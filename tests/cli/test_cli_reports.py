"""The report, compare and audit commands: files written, exit statuses 0 / 1 / 2."""

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

from eb_torchperf.cli.dispatch import main

from auditcases import GOLDEN

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"
DEBIAN_PYTHON = "/usr/bin/python3"


def _has_torch(python):
    return shutil.which(python) is not None and subprocess.run(
        [python, "-c", "import torch"], capture_output=True).returncode == 0


def test_report_rerenders_and_fails_on_the_error_finding(tmp_path, capsys):
    source = tmp_path / "run.json"
    shutil.copy(GOLDEN, source)
    assert main(["report", str(source)]) == 1
    out = capsys.readouterr().out
    assert "ERROR blas-not-mkl" in out and "md report: %s" % (tmp_path / "run.md") in out
    assert (tmp_path / "run.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "run.md").read_text().startswith("# PyTorch performance audit")
    assert main(["report", str(source), "--fail-on", "never", "--format", "md",
                 "--out-dir", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.md"]


def test_report_usage_errors_exit_2(tmp_path, capsys):
    assert main(["report", str(GOLDEN), "--format", "pdf", "--out-dir", str(tmp_path)]) == 2
    assert "unknown report format pdf (choose from html, md, json)" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(GOLDEN), "--fail-on", "sometimes"])
    assert exit_info.value.code == 2


def test_compare_two_stored_runs(tmp_path, capsys):
    before = EXAMPLES / "debian-python3-torch-vs-wheel-2.13.0.json"
    after = EXAMPLES / "wheel-2.13.0-vs-itself.json"
    status = main(["compare", str(before), str(after), "--out-dir", str(tmp_path),
                   "--format", "html,md,json"])
    out = capsys.readouterr().out
    assert status == 0  # the wheel has no error finding against the Debian build
    assert "Unpaired comparison of two stored runs" in out
    stem = "compare-debian-python3-torch-vs-wheel-2.13.0-vs-wheel-2.13.0-vs-itself"
    markdown = (tmp_path / (stem + ".md")).read_text()
    assert "> Unpaired comparison of two stored runs: debian-python3-torch-vs-wheel-2.13.0.json" \
           " is the reference (100 %)" in markdown
    document = json.loads((tmp_path / (stem + ".json")).read_text())
    assert document["reference"]["python"] == DEBIAN_PYTHON


def test_audit_of_the_wheel_against_itself_writes_reports_and_exits_0(tmp_path, capsys):
    out = tmp_path / "a" / "run.json"
    status = main(["audit", "--python", sys.executable, "--reference", sys.executable,
                   "--only", "dispatch", "--pairs", "1", "--quiet", "--allow-same-torch",
                   "--out", str(out)])
    assert status == 0
    document = json.loads(out.read_text())
    # a busy host (issue 26) is said so, as warnings about the measurement only
    assert [f["severity"] for f in document["findings"] if f["severity"] != "info"
            and f["rule_id"] not in ("host-busy", "measurement-undecided")] == []
    assert sorted(p.name for p in out.parent.iterdir()) == ["run.html", "run.json", "run.md"]
    # one pair on a shared machine can leave the row inconclusive (issue 16)
    row = document["analysis"]["rows"][0]
    assert row["bench"] == "dispatch" and row["pairs"] == 1
    expected = ("1 of 1 benchmark inconclusive (95 % interval wider than ±10 % or not "
                "clear of the A/A floor)"
                if row["inconclusive"] else "OK: target at")
    printed = capsys.readouterr().out
    assert expected in printed and "OK: 1 of 1" not in printed  # never OK undecided


@pytest.mark.skipif(not _has_torch(DEBIAN_PYTHON),
                    reason="Debian python3-torch not installed (apt-get install python3-torch)")
def test_audit_of_debian_torch_fails_on_warning(tmp_path, capsys):
    out = tmp_path / "run.json"
    status = main(["audit", "--python", DEBIAN_PYTHON, "--reference", sys.executable,
                   "--only", "dispatch", "--pairs", "1", "--quiet", "--out", str(out),
                   "--fail-on", "warning", "--format", "md"])
    assert status == 1
    ids = {f["rule_id"] for f in json.loads(out.read_text())["findings"]}
    assert {"blas-not-mkl", "mkl-missing", "threads-vs-cores"} <= ids
    assert (tmp_path / "run.md").exists() and not (tmp_path / "run.html").exists()


def test_audit_cut_short_still_writes_results_and_exits_2(tmp_path, capsys):
    broken = tmp_path / "python-without-torch"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named torch' >&2\nexit 1\n")
    broken.chmod(0o755)
    out = tmp_path / "run.json"
    status = main(["audit", "--python", str(broken), "--reference", "none", "--only", "dispatch",
                   "--pairs", "1", "--quiet", "--out", str(out)])
    assert status == 2
    assert "results so far written to %s" % out in capsys.readouterr().err
    document = json.loads(out.read_text())
    assert document["complete"] is False and document["findings"] == []
    assert (tmp_path / "run.md").read_text().count("INCOMPLETE RUN") == 1


@pytest.mark.skipif(not _has_torch(DEBIAN_PYTHON),
                    reason="Debian python3-torch not installed (apt-get install python3-torch)")
def test_audit_explain_adds_the_profile_diff(tmp_path, capsys):
    out = tmp_path / "run.json"
    status = main(["audit", "--python", DEBIAN_PYTHON, "--reference", sys.executable,
                   "--only", "dispatch", "--pairs", "1", "--quiet", "--out", str(out),
                   "--fail-on", "never", "--format", "md", "--explain"])
    assert status == 0
    explained = json.loads((tmp_path / "run.explain.json").read_text())
    assert [p["workload"] for p in explained["profiles"]] == [
        "bert_layer_infer", "bert_layer_train", "resnet_block", "dlrm"]
    assert explained["trials"] == [] and explained["rebuild"] == []
    blas = next(f for f in json.loads(out.read_text())["findings"]
                if f["rule_id"] == "blas-not-mkl")
    assert blas["evidence"]["profile: largest operator"].startswith("aten::")
    markdown = (tmp_path / "run.md").read_text()
    assert "## Explain: profile diff and remedy trials" in markdown
    assert "Not run with this profile (`eb-torchperf explain` runs them)." in markdown
    assert "Profile diff: self CPU time per step" in capsys.readouterr().out


def test_audit_explain_needs_a_reference(capsys):
    assert main(["audit", "--python", sys.executable, "--reference", "none", "--explain"]) == 2
    assert capsys.readouterr().err == ("eb-torchperf: error: --explain needs a reference to "
                                       "profile against; leave out --reference none\n")


def test_compare_refuses_an_incomplete_run(tmp_path, capsys):
    complete = EXAMPLES / "wheel-2.13.0-vs-itself.json"
    data = json.loads(complete.read_text())
    data["complete"] = False
    data["errors"] = [{"side": "target", "message": "worker killed by signal SIGSEGV"}]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(data))
    assert main(["compare", str(complete), str(cut), "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == ("eb-torchperf: error: %s is an incomplete run (worker killed by signal "
                   "SIGSEGV); compare needs complete runs\n" % cut)
