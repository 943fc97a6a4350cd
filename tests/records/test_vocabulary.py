"""One vocabulary (issue 25): fail levels, exit statuses, how a run ended, environment
overrides and paths under a folder, each defined once and used by every command."""

import argparse
import dataclasses

import pytest

from eb_torchperf.cli.dispatch import build_parser
from eb_torchperf.diagnosis import sitepolicy
from eb_torchperf.measure.environ import apply_overrides, path_under
from eb_torchperf.records.findings import (COMPLETE, CUT_SHORT, EXIT_ERROR, EXIT_FINDINGS,
                                           EXIT_INTERRUPTED, EXIT_OK, FAIL_LEVELS, INTERRUPTED,
                                           INTERRUPTED_RUN, Finding, exit_status)
from eb_torchperf.records.measurements import AuditResult

WARNING = Finding("w", "warning", "a warning", {}, "advice", "https://example.org")


def _sub_parsers():
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def _fail_on(sub):
    return next((a for a in sub._actions if "--fail-on" in a.option_strings), None)


def test_every_command_with_a_fail_level_spells_it_fail_on_with_one_set_of_levels():
    subs = _sub_parsers()
    with_level = {name: _fail_on(sub) for name, sub in subs.items() if _fail_on(sub)}
    assert {"audit", "report", "compare", "explain", "gpu", "lint", "fleet",
            "sanity-check"} <= set(with_level)
    for name, action in with_level.items():
        expected = sitepolicy.FAIL_LEVELS if name == "sanity-check" else FAIL_LEVELS
        assert tuple(action.choices) == tuple(expected), name
    assert not any("--fail-level" in a.option_strings and a.help != argparse.SUPPRESS
                   for sub in subs.values() for a in sub._actions)


def test_sanity_check_still_reads_the_old_spelling():
    subs = _sub_parsers()
    old = subs["sanity-check"].parse_args(["--fail-level", "warning"])
    new = subs["sanity-check"].parse_args(["--fail-on", "warning"])
    assert old.fail_level == new.fail_level == "warning"


def test_the_site_policy_levels_are_fail_levels():
    assert set(sitepolicy.FAIL_LEVELS) == {"warning", "error"} < set(FAIL_LEVELS)


def _run(complete=True, errors=()):
    return AuditResult("quick", {}, None, None, errors=tuple(errors), complete=complete)


def test_how_a_run_ended_is_typed_and_old_documents_map_forward():
    assert _run().outcome == COMPLETE
    stopped = {"side": None, "message": INTERRUPTED, "kind": "interrupted"}
    assert _run(False, [stopped]).outcome == INTERRUPTED_RUN
    schema_2 = {"side": None, "message": INTERRUPTED}  # written before `kind` existed
    assert _run(False, [schema_2]).outcome == INTERRUPTED_RUN
    # a worker whose own message happens to read the same is not an interrupt
    assert _run(False, [dict(stopped, kind="worker")]).outcome == CUT_SHORT
    assert _run(False, [{"message": "worker hung"}]).outcome == CUT_SHORT
    assert _run(False).outcome == CUT_SHORT


@pytest.mark.parametrize("findings, fail_on, outcome, status", [
    ((), "error", COMPLETE, EXIT_OK),
    ((WARNING,), "warning", COMPLETE, EXIT_FINDINGS),
    ((WARNING,), "never", COMPLETE, EXIT_OK),
    ((), "never", CUT_SHORT, EXIT_ERROR),
    ((WARNING,), "warning", INTERRUPTED_RUN, EXIT_INTERRUPTED),
])
def test_exit_status(findings, fail_on, outcome, status):
    assert exit_status(findings, fail_on, outcome) == status
    assert (EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED) == (0, 1, 2, 130)


def test_a_stored_interrupted_audit_exits_130_through_the_pipeline():
    from eb_torchperf.workflows.pipeline import status_of
    stopped = _run(False, [{"message": INTERRUPTED, "kind": "interrupted"}])
    assert status_of(stopped, "error") == EXIT_INTERRUPTED
    assert status_of(dataclasses.replace(stopped, errors=({"message": "x"},)), "error") == 2
    assert status_of(stopped, "error", stored=True) == EXIT_OK


def test_overrides_set_and_remove():
    assert apply_overrides({"A": "1", "B": "2"}, {"A": None, "C": "3"}) == {"B": "2", "C": "3"}
    assert apply_overrides({"A": "1"}, None) == {"A": "1"}


def test_path_under_resolves_links(tmp_path):
    (tmp_path / "root" / "lib").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "root")
    assert path_under(str(tmp_path / "link" / "lib" / "torch.py"), str(tmp_path / "root"))
    assert path_under(str(tmp_path / "root"), str(tmp_path / "root"))
    assert not path_under(str(tmp_path / "rootless" / "x"), str(tmp_path / "root"))
    assert not path_under("", str(tmp_path))
