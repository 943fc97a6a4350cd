"""The `eb-torchperf` shell: exit statuses, one-line errors, results always written."""

import json

import pytest

from eb_torchperf.cli.dispatch import main
from eb_torchperf.records.measurements import load_results


def run_cli(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "audit" in out and "probe" in out and "exit status" in out


@pytest.mark.parametrize("argv, line", [
    (["audit", "--suite", "nope"], "eb-torchperf audit: error: argument --suite: invalid "
     "choice: 'nope' (choose from 'full', 'models', 'quick') (see eb-torchperf audit --help)"),
    (["explain", "--profile-rounds", "abc"], "eb-torchperf explain: error: argument "
     "--profile-rounds: invalid int value: 'abc' (see eb-torchperf explain --help)"),
    ([], "eb-torchperf: error: the following arguments are required: COMMAND "
     "(see eb-torchperf --help)")])
def test_usage_errors_are_one_line_without_the_usage_block(capsys, argv, line):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err == line + "\n"


def test_missing_target_is_one_line(capsys):
    status, out, err = run_cli(capsys, "audit", "--python", "/nonexistent/python")
    assert status == 2
    assert err == ("eb-torchperf: error: target interpreter '/nonexistent/python' not found or "
                   "not executable (give a path to a python, e.g. /usr/bin/python3)\n")
    status, out, err = run_cli(capsys, "audit", "--reference", "/nonexistent/python")
    assert status == 2 and err.endswith("/usr/bin/python3, or 'wheel' for the upstream wheel)\n")


def test_bad_wheel_version(capsys, wheel_python):
    status, _, err = run_cli(capsys, "audit", "--python", wheel_python,
                             "--reference", "wheel==not.a.version")
    assert status == 2 and "'not.a.version' is not a valid version" in err
    assert err.count("\n") == 1


def test_unknown_benchmark(capsys, wheel_python):
    status, _, err = run_cli(capsys, "audit", "--python", wheel_python, "--reference", "none",
                             "--only", "nope")
    assert status == 2 and "unknown benchmark(s): nope" in err


@pytest.mark.parametrize("extra, where", [
    (("--device", "cpu"), "cpu"), ((), "cpu/cuda")])
def test_only_a_benchmark_outside_the_suite_measures_nothing_and_says_so(capsys, extra, where):
    status, out, err = run_cli(capsys, "audit", "--python", "/nonexistent/python",
                               "--reference", "none", "--only", "allreduce_nccl_8gpu", *extra)
    assert status == 2 and out == ""
    assert err == ("eb-torchperf: error: nothing to measure: no benchmark of the quick suite on "
                   "%s matches --only; runs in: allreduce_nccl_8gpu (full suite, cuda)\n" % where)


def test_only_names_outside_the_plan_are_not_dropped_silently(capsys):
    status, out, err = run_cli(capsys, "audit", "--python", "/nonexistent/python",
                               "--only", "dispatch", "--only", "gemm_cuda", "--device", "cpu")
    assert status == 2 and out == ""
    assert err == ("eb-torchperf: error: --only gemm_cuda: not in the quick suite on cpu "
                   "(gemm_cuda runs in the quick/full suite on cuda)\n")


@pytest.mark.parametrize("item", ["NOEQUALS", "=x", "A B=1", "1X=1"])
def test_target_env_needs_a_variable_name(capsys, wheel_python, item):
    status, _, err = run_cli(capsys, "audit", "--python", wheel_python, "--target-env", item)
    assert status == 2 and err.count("\n") == 1
    assert "--target-env wants VAR=VALUE with VAR a variable name" in err and repr(item) in err


def test_bad_pairs(capsys, wheel_python):
    status, _, err = run_cli(capsys, "audit", "--python", wheel_python, "--pairs", "0")
    assert status == 2 and "--pairs must be at least 1, not 0" in err


def test_bad_timeout(capsys, wheel_python):
    status, _, err = run_cli(capsys, "audit", "--python", wheel_python, "--timeout", "-3")
    assert status == 2 and err == ("eb-torchperf: error: --timeout must be a number of seconds "
                                   "> 0 and at most 604800 (a week), not -3\n")


def test_unwritable_out_fails_before_measuring(capsys, tmp_path, wheel_python):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    status, out, err = run_cli(capsys, "audit", "--python", wheel_python, "--reference", "none",
                               "--only", "dispatch", "--out", str(blocker / "r.json"))
    assert status == 2 and out == ""
    assert err.startswith("eb-torchperf: error: cannot write results to %s" % (blocker / "r.json"))
    assert err.count("\n") == 1


def test_unwritable_probe_out_is_one_line(capsys, tmp_path, wheel_python):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    status, _, err = run_cli(capsys, "probe", "--python", wheel_python,
                             "--out", str(blocker / "p.json"))
    assert status == 2 and err.count("\n") == 1 and str(blocker / "p.json") in err


def test_target_without_torch_writes_results(capsys, tmp_path, python_without_torch):
    out_file = tmp_path / "r.json"
    status, _, err = run_cli(capsys, "audit", "--python", python_without_torch,
                             "--reference", "none", "--quiet", "--out", str(out_file))
    assert status == 2
    line = err.strip().splitlines()[-1]
    assert line.startswith("eb-torchperf: error: target %s: import torch failed: "
                           "ModuleNotFoundError" % python_without_torch)
    assert str(out_file) in line
    assert load_results(out_file).complete is False


def test_audit_wheel_against_itself_small(capsys, tmp_path, wheel_python):
    out_file = tmp_path / "r.json"
    status, out, err = run_cli(capsys, "audit", "--python", wheel_python, "--reference",
                               wheel_python, "--only", "dispatch", "--pairs", "1", "--quiet", "--allow-same-torch",
                               "--out", str(out_file))
    assert status == 0, err
    assert "Relative OPS (reference = 100 %)" in out and "BLAS_INFO" in out
    result = load_results(out_file)
    assert result.complete and {r.side for r in result.results} == {"target", "reference"}
    assert result.options["pairs"] == 1


def test_audit_without_reference_prints_absolute_rates(capsys, tmp_path, wheel_python):
    status, out, _ = run_cli(capsys, "audit", "--python", wheel_python, "--reference", "none",
                             "--only", "dispatch", "--pairs", "1", "--quiet",
                             "--out", str(tmp_path / "r.json"))
    assert status == 0 and "Absolute rates (no reference)" in out and "µs/op" in out


def test_probe_command_debian(capsys, debian_python):
    status, out, _ = run_cli(capsys, "probe", "--python", debian_python)
    document = json.loads(out)
    assert status == 0
    assert document["build"]["blas_info"] == "generic"
    assert document["parallel"]["intra_op_threads"] == 1
