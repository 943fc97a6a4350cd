"""audit --no-trials / --trial-budget (issue 29): parsed into the request, bad values
refused in one line before anything runs."""

import sys

import pytest

from eb_torchperf import cli
from eb_torchperf.cli.audit import request_of
from eb_torchperf.cli.dispatch import build_parser


def _request(*extra):
    args = build_parser().parse_args(["audit", "--reference", "none", *extra])
    return request_of(args, out="")


def test_trials_are_on_by_default_and_options_reach_the_request():
    assert (_request().trials, _request().trial_budget_s) == (True, None)
    assert _request("--no-trials").trials is False
    assert _request("--trial-budget", "12.5").trial_budget_s == 12.5


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_bad_trial_budget_is_one_line_exit_2(capsys, value):
    assert cli.main(["audit", "--python", sys.executable, "--reference", "none",
                     "--trial-budget", value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--trial-budget must be a number of seconds > 0" in err[0]
