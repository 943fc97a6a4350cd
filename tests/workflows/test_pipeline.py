"""workflows.pipeline: every option is validated before a process starts or a reference
venv is resolved, and the steps give the outcome the CLI used to assemble itself."""

import dataclasses
import shutil
import time

import pytest

from eb_torchperf.cli.dispatch import main
from eb_torchperf.diagnosis.sitepolicy import Policy
from eb_torchperf.errors import ConfigError
from eb_torchperf.records.measurements import load_results
from eb_torchperf.workflows import pipeline, sitecheck
from eb_torchperf.workflows.request import AuditRequest, ExplainOptions, validate

from auditcases import GOLDEN

#: A fake interpreter that leaves a mark when anything runs it (a torch version
#: query, a worker, pip's venv creation through it).
FAKE_PYTHON = """#!/bin/sh
touch "{mark}"
exit 1
"""


@pytest.fixture
def fake_target(tmp_path):
    """(path of an executable that marks being run, the mark's path)."""
    mark = tmp_path / "ran"
    script = tmp_path / "python"
    script.write_text(FAKE_PYTHON.format(mark=mark))
    script.chmod(0o755)
    return str(script), mark


@pytest.mark.parametrize("extra, message", [
    (("--pairs", "0"), "eb-torchperf: error: --pairs must be at least 1, not 0\n"),
    (("--timeout", "0"), "eb-torchperf: error: --timeout must be a number of seconds > 0 and "
                         "at most 604800 (a week), not 0\n"),
    (("--target-env", "1X=1"), "eb-torchperf: error: --target-env wants VAR=VALUE with VAR a "
                               "variable name (letters, digits, _; not starting with a "
                               "digit), not '1X=1'\n"),
    (("--only", "gleu"), "eb-torchperf: error: unknown benchmark(s): gleu. Did you mean "
                         "gelu? `--help` lists the "),
    (("--cache-dir", "/etc/passwd/venvs"), "eb-torchperf: error: --cache-dir "
                                           "/etc/passwd/venvs: /etc/passwd is not a folder\n"),
    (("--reference", "wheel==x.y"), "eb-torchperf: error: --reference wheel==x.y: 'x.y' is "
                                    "not a valid version\n"),
])
def test_bad_options_fail_before_any_process_or_venv(tmp_path, capsys, fake_target, extra,
                                                     message):
    """With the default --reference wheel, a bad option is refused at once: the target is
    never run (no torch version asked) and the empty cache gets no venv."""
    python, mark = fake_target
    cache = tmp_path / "cache"
    cache.mkdir()
    started = time.monotonic()
    status = main(["audit", "--python", python, "--cache-dir", str(cache),
                   "--out", str(tmp_path / "r.json"), "--quiet", *extra])
    elapsed = time.monotonic() - started
    _, err = capsys.readouterr()
    assert status == 2 and err.startswith(message) and err.count("\n") == 1
    assert not mark.exists() and list(cache.iterdir()) == []
    assert not (tmp_path / "r.json").exists()
    assert elapsed < 5, elapsed


def test_a_good_request_reaches_the_target_only_after_validation(tmp_path, capsys, fake_target):
    """The same call with good options does run the target (to ask its torch version for
    `wheel`): the mark is the test's own control."""
    python, mark = fake_target
    cache = tmp_path / "cache"
    cache.mkdir()
    status = main(["audit", "--python", python, "--cache-dir", str(cache),
                   "--out", str(tmp_path / "r.json"), "--quiet"])
    assert status == 2 and mark.exists() and list(cache.iterdir()) == []
    assert "torch does not import" in capsys.readouterr().err


def test_site_check_validates_before_the_reference(tmp_path, fake_target):
    python, mark = fake_target
    with pytest.raises(ConfigError, match=r"unknown benchmark\(s\): nope"):
        sitecheck.run_check(python, Policy(only=("nope",)), [str(tmp_path / "out")])
    assert not mark.exists() and not (tmp_path / "out").exists()


def test_site_check_request_keeps_the_policy():
    request = sitecheck.request_of(Policy(reference="/x/base.json", suite="full",
                                          only=("matmul_fp32",), pairs=2), "/usr/bin/python3")
    assert (request.reference, request.baseline, request.suite, request.only, request.pairs,
            request.devices, request.timeout_s) == (
        "none", "/x/base.json", "full", ("matmul_fp32",), 2, ("cpu",), None)


def test_validate_builds_the_runner_options_once():
    plan = validate(AuditRequest(target="/bin/sh", reference="/bin/sh", suite="full", pairs=2,
                                 timeout_s=30.0, explain=ExplainOptions(trial_pairs=1)))
    assert (plan.options.pairs, plan.options.request_timeout_s, plan.options.start_timeout_s,
            plan.options.max_rounds) == (2, 30.0, 30.0, 20)
    assert (plan.trial_options.pairs, plan.trial_options.request_timeout_s) == (1, 30.0)
    assert plan.profile_options.request_timeout_s == 30.0


@pytest.mark.parametrize("request_, message", [
    (AuditRequest(results="x.json", target="/bin/sh"), "--results takes the interpreters"),
    (AuditRequest(target="/bin/sh", reference="none", explain=ExplainOptions()),
     "--explain needs a reference"),
    (AuditRequest(target="/bin/sh", reference="none", formats=("pdf",)),
     "unknown report format pdf"),
    (AuditRequest(target="/bin/sh", reference="none", fail_on="sometimes"), "fail_on must be"),
    (AuditRequest(target="/bin/sh", reference="/bin/sh", explain=ExplainOptions(
        workloads=("nope",))), r"unknown workload\(s\): nope"),
    (AuditRequest(target="/bin/sh", baseline="b.json", reference="wheel"),
     "a baseline results file is the reference"),
])
def test_validate_refuses(request_, message):
    with pytest.raises(ConfigError, match=message):
        validate(request_)


def test_report_pipeline_on_a_stored_run(tmp_path):
    """A stored run: re-diagnosed, reports beside it, exit status by its findings."""
    source = tmp_path / "run.json"
    shutil.copy(GOLDEN, source)
    outcome = pipeline.run(AuditRequest(results=str(source), formats=("md",)))
    assert outcome.status == 1 and outcome.results_path == ""
    assert "blas-not-mkl" in [f.rule_id for f in outcome.result.findings]
    assert outcome.written == {"md": tmp_path / "run.md"}
    assert len(outcome.comparisons) == len({(r.bench, str(r.params))
                                            for r in load_results(source).results})


def test_stored_run_cut_short_is_judged_by_its_findings_but_a_measured_one_is_an_error():
    result = dataclasses.replace(load_results(GOLDEN), complete=False,
                                 errors=({"side": "target", "message": "audit interrupted"},))
    assert pipeline.status_of(result, "never", stored=True) == 0
    assert pipeline.status_of(result, "never") == 130
    other = dataclasses.replace(result, errors=({"message": "worker died"},))
    assert pipeline.status_of(other, "never") == 2
