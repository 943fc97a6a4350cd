"""Issue 27: the helper's own hostile cases on a clean use of the CLI (the ones that
failed before their fix; the ones that held are listed in the round's report)."""

import json
import os
import pathlib
import sys

from eb_torchperf import cli
from test_hostile_round2 import GOLDEN, _one_error_line

def _audit(*extra) -> int:
    return cli.main(["audit", "--python", sys.executable, "--reference", "none", "--quiet",
                     "--pairs", "1", "--only", "dispatch", "--device", "cpu", *extra])


def test_an_integer_too_large_for_a_float_is_bad_input(tmp_path, capsys):
    document = json.loads(GOLDEN.read_text())
    document["wall_s"] = 10 ** 400  # valid JSON; float() overflows (was exit 3)
    stored = tmp_path / "run.json"
    stored.write_text(json.dumps(document))
    assert cli.main(["report", str(stored), "--format", "md"]) == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: %s: wall_s: expected a number, got 100000000000... "
        "(401 digits)\n" % stored)


def test_a_newline_in_the_results_name_is_refused(tmp_path, capsys):
    out = tmp_path / "a\nb.json"  # the printed "results: PATH" line would be two lines
    assert _audit("--out", str(out)) == 2
    assert "a file name with a control character (a newline, a tab) is refused" in \
        _one_error_line(capsys)
    assert os.listdir(tmp_path) == []


def test_a_results_folder_that_is_a_file_is_named(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert _audit("--out", str(tmp_path / "f" / "run.json")) == 2
    assert _one_error_line(capsys) == (  # was "File exists"
        "eb-torchperf: error: cannot write results to %s: %s is not a folder\n"
        % (tmp_path / "f" / "run.json", tmp_path / "f"))


def test_a_report_folder_that_is_a_device_is_named(tmp_path, capsys):
    assert cli.main(["report", str(GOLDEN), "--format", "md", "--out-dir", "/dev/null"]) == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: cannot write reports into /dev/null: /dev/null is not a "
        "folder\n")
    assert pathlib.Path("/dev/null").is_char_device()


def test_a_report_name_linked_to_a_device_is_refused(tmp_path, capsys):
    stored = tmp_path / "run.json"
    stored.write_text(GOLDEN.read_text())
    (tmp_path / "run.md").symlink_to("/dev/null")
    assert cli.main(["report", str(stored), "--format", "md", "--fail-on", "never"]) == 2
    assert "cannot write %s: it is not a regular file" % (tmp_path / "run.md") in \
        _one_error_line(capsys)
    assert os.readlink(str(tmp_path / "run.md")) == "/dev/null"
