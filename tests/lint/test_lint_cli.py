"""`eb-torchperf lint` through lint_cli.add_arguments/run (needs EasyBuild)."""

import argparse
import json

import pytest

from eb_torchperf.cli import lint as lint_cli
from eb_torchperf.errors import ConfigError
from lint_factories import BAD, DATA, ROBOT, sandbox_unreadable_reason

pytestmark = [pytest.mark.usefixtures("easybuild_ready"),
              pytest.mark.skipif(sandbox_unreadable_reason() is not None,
                                 reason=str(sandbox_unreadable_reason()))]


def run(*argv):
    parser = argparse.ArgumentParser(prog="eb-torchperf lint")
    lint_cli.add_arguments(parser)
    argv = list(argv)
    if "--robot-paths" not in argv:
        argv += ["--robot-paths", str(ROBOT)]
    return lint_cli.run(parser.parse_args(argv))


def test_only_warnings_exit_0_by_default(capsys):
    assert run(str(DATA / "PyTorch-2.9.1-flexiblas-blis.eb")) == 0
    out = capsys.readouterr().out
    assert "blas-not-mkl" in out and "Summary: 1 files, 1 linted" in out


@pytest.mark.parametrize("fail_on, expected", [("warning", 1), ("info", 1), ("error", 0),
                                               ("never", 0)])
def test_fail_on(fail_on, expected):
    assert run(str(DATA / "PyTorch-2.9.1-flexiblas-blis.eb"), "--fail-on", fail_on) == expected


def test_errors_exit_1():
    assert run(str(DATA / "PyTorch-2.9.1-no-blas.eb")) == 1


def test_bad_inputs_one_line_each_on_stderr_and_exit_2(capsys):
    status = run(str(BAD), str(DATA / "PyTorch-2.9.1-whl.eb"), "--format", "json")
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.splitlines() == [
        "eb-torchperf lint: %s: cannot parse: invalid syntax (<string>, line 1)"
        % (BAD / "README-not-an-easyconfig.eb"),
        "eb-torchperf lint: %s: not an easyconfig (neither 'name' nor 'easyblock' is set)"
        % (BAD / "no-name.eb"),
        "eb-torchperf lint: %s: cannot parse: '[' was never closed (<string>, line 3)"
        % (BAD / "syntax-error.eb"),
    ]
    document = json.loads(captured.out)
    assert [f["problem"] is None for f in document["files"]] == [False, False, False, True]
    assert document["files"][3]["findings"][0]["rule_id"] == "wheel-install"


def test_markdown_output(capsys):
    run(str(DATA / "PyTorch-2.9.1-CUDA-12.8.0.eb"), "--format", "md", "--site-gpus", "10.0")
    out = capsys.readouterr().out
    assert "| Severity | Rule | Line | Finding | Evidence | Advice | Source |" in out
    assert "| error | `cuda-cc-uncovered` | 15 |" in out


def test_cuda_capabilities_option_overrides_the_easyconfig(capsys):
    assert run(str(DATA / "PyTorch-2.9.1-CUDA-12.8.0.eb"), "--format", "json",
               "--site-gpus", "10.0", "--cuda-compute-capabilities", "10.0") == 0
    rules = [f["rule_id"] for f in json.loads(capsys.readouterr().out)["files"][0]["findings"]]
    assert "cuda-cc-uncovered" not in rules


def test_arch_option(capsys):
    run(str(DATA / "PyTorch-2.9.1-no-blas.eb"), "--arch", "aarch64", "--format", "json")
    rules = [f["rule_id"] for f in json.loads(capsys.readouterr().out)["files"][0]["findings"]]
    assert rules == ["blas-missing", "aarch64-no-acl"]


def test_no_dependency_check(capsys):
    run(str(DATA / "PyTorch-2.9.1-missing-dep.eb"), "--no-dependency-check", "--format", "json")
    rules = [f["rule_id"] for f in json.loads(capsys.readouterr().out)["files"][0]["findings"]]
    assert "missing-dependency" not in rules


def test_bad_site_gpus_is_a_usage_error():
    with pytest.raises(ConfigError, match=r"--site-gpus: 'sm_90' is not a CUDA compute capability"):
        run(str(DATA / "PyTorch-2.9.1-whl.eb"), "--site-gpus", "sm_90")


def test_bad_robot_path_is_a_usage_error(tmp_path):
    with pytest.raises(ConfigError, match="robot path .* is not a directory"):
        run(str(DATA / "PyTorch-2.9.1-whl.eb"), "--robot-paths", str(tmp_path / "nope"))


def test_empty_directory_is_a_usage_error(tmp_path):
    with pytest.raises(ConfigError, match=r"no files matching '\*\.eb' in"):
        run(str(tmp_path))
