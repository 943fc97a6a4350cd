"""Issue 14, crashes and escaping: one case each, the smallest reproduction."""

import io
import os
import pathlib
import stat
import subprocess
import sys

import pytest
from rich.console import Console

from eb_torchperf import cli
from eb_torchperf.present import escape
from eb_torchperf.errors import ConfigError, ProbeError
from eb_torchperf.measure.runner import ProbeBundle, Worker
from faults import faulty_python

DATA = pathlib.Path(__file__).parent.parent / "data"
GOLDEN = DATA / "results-debian-vs-wheel-v1.json"


def _script(path: pathlib.Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _replier(path: pathlib.Path, line: str) -> str:
    """A fake interpreter that writes `line` to the worker's reply fd, then waits."""
    path.write_text("#!%s\nimport os, sys, time\n"
                    "fd = int(sys.argv[sys.argv.index('--reply-fd') + 1])\n"
                    "os.write(fd, %r)\ntime.sleep(5)\n" % (sys.executable, line.encode() + b"\n"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _one_error_line(capsys):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_latin1_terminal_encoding_does_not_crash(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "eb_torchperf.cli", "report", str(GOLDEN), "--format", "md",
         "--out-dir", str(tmp_path)], capture_output=True,
        env=dict(os.environ, PYTHONIOENCODING="latin-1"), timeout=120)
    assert proc.returncode in (0, 1), proc.stderr.decode("latin-1")
    assert b"Traceback" not in proc.stderr
    assert b"\\u2013" in proc.stdout  # the en dash of an interval, written as an escape


@pytest.mark.parametrize("value", ["inf", "1e300", "nan", "0", "-5"])
def test_absurd_timeouts_are_refused_in_one_line(capsys, value):
    assert cli.main(["audit", "--python", sys.executable, "--reference", "none",
                     "--timeout", value]) == 2
    assert "--timeout must be a number of seconds > 0 and at most 604800" in \
        _one_error_line(capsys)


def test_bad_options_are_refused_before_pip_runs(tmp_path, capsys):
    cache = tmp_path / "cache"
    for bad in (["--pairs", "0"], ["--target-env", "1X=2"]):
        assert cli.main(["audit", "--python", sys.executable, "--reference", "wheel==2.13.0",
                         "--cache-dir", str(cache), *bad]) == 2
        _one_error_line(capsys)
    assert not cache.exists()  # no venv was started


def test_timeout_bounds_a_hanging_import_torch_with_the_wheel_reference(tmp_path, capsys):
    hanging = _script(tmp_path / "python", "sleep 30\n")
    assert cli.main(["audit", "--python", hanging, "--reference", "wheel", "--timeout", "1",
                     "--cache-dir", str(tmp_path / "cache")]) == 2
    assert _one_error_line(capsys) == (
        "eb-torchperf: error: target %s: `import torch` gave no answer within 1 s (raise "
        "--timeout if the build is just very slow)\n" % hanging)


def test_a_non_json_line_on_the_reply_channel_is_a_probe_error(tmp_path):
    talker = _replier(tmp_path / "python", "not json at all")
    with ProbeBundle() as bundle:
        worker = Worker(talker, bundle.path, "target", start_timeout_s=30)
        with pytest.raises(ProbeError) as caught:
            worker.start()
        worker.close()
    assert str(caught.value) == ("target %s: the worker sent a line that is not a JSON reply "
                                 "while starting (import torch): 'not json at all'; the worker "
                                 "was killed" % talker)


def test_a_target_path_with_rich_markup_is_shown_literally(tmp_path, wheel_python):
    folder = tmp_path / "a[" / "x]"
    folder.mkdir(parents=True)
    python = faulty_python(folder, wheel_python, "crash", at=3)
    assert "[/x]" in python
    proc = subprocess.run(
        [sys.executable, "-m", "eb_torchperf.cli", "audit", "--python", python,
         "--reference", "none", "--only", "dispatch", "--device", "cpu", "--pairs", "1",
         "--format", "md", "--out", str(tmp_path / "run.json")],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("eb-torchperf: error: target %s: worker killed by signal SIGSEGV"
                           % python)


def test_rich_markup_in_values_never_becomes_markup():
    console = Console(file=io.StringIO(), record=True, width=200)
    text = "[link=https://evil.example]click[/link] [/x] [bold]"
    console.print("[red]%s[/red]" % escape.rich_text(text))
    assert console.export_text().strip() == text
    assert 'href="https://evil.example"' not in console.export_html()


@pytest.mark.parametrize("value, expected", [
    ("a|b", "a\\|b"), ("<script>", "&lt;script&gt;"), ("x\n\n<b>y", "x<br><br>&lt;b&gt;y"),
    ("*bold* [l](u) `c`", "\\*bold\\* \\[l\\](u) \\`c\\`"), ("lib_64.so", "lib_64.so"),
    ("_init_", "\\_init\\_"),
])
def test_markdown_text(value, expected):
    assert escape.markdown_text(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("a\n\nb", "`a b`"), ("x`y", "``x`y``"), ("`x", "`` `x ``"), ("a|b", "`a\\|b`"),
])
def test_markdown_code_spans_have_no_line_breaks(value, expected):
    assert escape.markdown_code(value) == expected


def test_shell_values_refuse_control_characters():
    assert escape.shell_value("gpu a", "--partition") == "'gpu a'"
    with pytest.raises(ConfigError, match=r"--partition 'gpu\\ntouch /tmp/x': control"):
        escape.shell_value("gpu\ntouch /tmp/x", "--partition")


@pytest.mark.parametrize("option", [["-p", "gpu\ntouch /tmp/x"], ["--python", "py\nrm -rf x"],
                                    ["--module", "PyTorch\nid"], ["-t", "1:00\nid"]])
def test_fleet_refuses_a_newline_in_any_batch_script_value(tmp_path, capsys, option):
    argv = ["fleet", "--dry-run", "--reference", "none", "--out", str(tmp_path / "f")] + option
    if option[0] != "-p":
        argv += ["-p", "gpu"]
    assert cli.main(argv) == 2
    assert "control characters (newline, tab, ...) are not allowed" in _one_error_line(capsys)


def test_fleet_partition_names_stay_inside_the_fleet_folder(tmp_path, capsys):
    assert cli.main(["fleet", "--dry-run", "--reference", "none", "--out", str(tmp_path / "f"),
                     "-p", "../../x"]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header == "# --- %s" % (tmp_path / "f" / "jobs" / "_.._x.sbatch")


def test_gpu_markdown_escapes_values(tmp_path):
    import dataclasses
    from eb_torchperf.cli.gpu import markdown
    from eb_torchperf.records.measurements import load_results
    result = load_results(DATA / "h200-quick-normal.json")
    facts = dict(result.target.facts)
    facts["gpu"] = dict(facts["gpu"], devices=[dict(facts["gpu"]["devices"][0],
                                                    name="H200 | <img src=x>\n\n# x")])
    target = dataclasses.replace(result.target, facts=facts)
    from eb_torchperf.cli.gpu import analyse, tables
    changed = dataclasses.replace(result, target=target)
    text = markdown([], tables(changed, analyse(changed)))
    assert "<img" not in text and "\n\n# x" not in text
    assert "H200 \\| &lt;img src=x&gt;<br><br># x" in text


def test_a_pythonpath_override_is_named_when_torch_does_not_import(tmp_path):
    fails = _replier(tmp_path / "python", '{"ok": false, "stage": "import torch", '
                     '"exc_type": "ModuleNotFoundError", "message": "No module named torch"}')
    with ProbeBundle() as bundle:
        worker = Worker(fails, bundle.path, "target", {"PYTHONPATH": "/elsewhere"}, 30)
        with pytest.raises(ProbeError) as caught:
            worker.start()
        worker.close()
    assert "import torch failed: ModuleNotFoundError: No module named torch (--target-env " \
           "PYTHONPATH=/elsewhere replaced this environment's PYTHONPATH" in str(caught.value)
