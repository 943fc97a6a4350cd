"""Small fresh-user fixes of issue 13 item 6: piped `compare` output, the fleet's
reference message, `sanity-check --help`, `--only` names in `--help`, skipped
benchmarks listed once.  (pip progress: tests/test_isolation.py.)"""

import json
import pathlib

import pytest

from eb_torchperf.cli.dispatch import build_parser, main
from eb_torchperf.errors import ConfigError
from eb_torchperf.cli.fleet import resolve_fleet_reference
from eb_torchperf.probe import registry
from eb_torchperf.present.report.render import skipped_rows

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"
RUN = EXAMPLES / "wheel-2.13.0-vs-itself.json"


def _help(*command):
    with pytest.raises(SystemExit):
        build_parser().parse_args(list(command) + ["--help"])


def test_piped_compare_is_wide_has_no_empty_interval_and_shows_the_difference(tmp_path,
                                                                              capsys):
    document = json.loads(RUN.read_text())
    wall_a = "%.0f s" % document["wall_s"]
    document["target"]["facts"]["env"] = {"OMP_NUM_THREADS": "1"}
    document["wall_s"] = 30.0
    after = tmp_path / "after.json"
    after.write_text(json.dumps(document))
    status = main(["compare", str(RUN), str(after), "--out-dir", str(tmp_path),
                   "--format", "md"])
    out = capsys.readouterr().out
    assert status == 0
    header = next(line for line in out.splitlines() if "benchmark" in line and "params" in line)
    assert "95 % CI" not in header and "relative OPS" in header
    assert "…" not in out  # no cut names
    assert "bert_layer_train" in out and "embedding_bag" in out
    assert "  environment OMP_NUM_THREADS: unset → 1" in out.splitlines()
    assert "  wall time of each run: A %s, B 30 s" % wall_a in out.splitlines()
    markdown = next(tmp_path.glob("*.md")).read_text()
    assert "What differs, A → B: environment OMP_NUM_THREADS: unset → 1; wall time of each " \
           "run: A %s, B 30 s" % wall_a in markdown
    assert "| wall time | 30 s |" in markdown  # B's own, not A + B


def test_fleet_unknown_reference_does_not_suggest_a_bare_wheel():
    with pytest.raises(ConfigError) as info:
        resolve_fleet_reference("/no/such/python", [], None, dry_run=True)
    assert str(info.value) == ("reference interpreter '/no/such/python' not found or not "
                               "executable (give a path to a python the nodes can run, "
                               "wheel==X.Y.Z, FILE.whl or none)")
    with pytest.raises(ConfigError, match="wheel==X.Y.Z"):
        resolve_fleet_reference("wheel", [], None, dry_run=True)


def test_sanity_check_help_names_one_default_mode(capsys):
    _help("sanity-check")
    text = " ".join(capsys.readouterr().out.split())
    assert "EB_TORCHPERF_MODE off | warn | fail: fail stops the installation (no module " \
           "file) [default: fail here (the hook: warn)]" in text
    assert "[default: warn]" not in text.split("EB_TORCHPERF_MODE", 1)[1].split("EB_TORCHPERF_LINT")[0]


@pytest.mark.parametrize("command", ["audit", "explain", "sanity-check", "fleet"])
def test_only_help_lists_every_benchmark(capsys, command):
    _help(command)
    text = " ".join(capsys.readouterr().out.split())
    names = list(registry.load_suites())
    assert "run only this benchmark (repeatable); cpu: " + ", ".join(
        n for n in names if registry.REGISTRY[n].device == "cpu") in text


def test_a_benchmark_skipped_on_both_sides_is_listed_once():
    skipped = [{"bench": "gemm_cuda", "params": {"n": 4096}, "side": side,
                "reason": "no CUDA device"} for side in ("target", "reference")]
    skipped.append({"bench": "denormal", "params": {}, "side": "target", "reason": "no FTZ"})
    assert skipped_rows(skipped) == [
        {"bench": "gemm_cuda", "params": "n=4096", "side": "target, reference",
         "reason": "no CUDA device"},
        {"bench": "denormal", "params": "", "side": "target", "reason": "no FTZ"}]


def test_the_results_line_counts_the_cause_trials_apart_from_the_measurement():
    from types import SimpleNamespace
    from eb_torchperf.cli.audit import time_spent
    result = SimpleNamespace(wall_s=64.4)
    assert time_spent(result, None) == "64 s"
    assert time_spent(result, SimpleNamespace(wall_s=0.0, profile_s=0.0)) == "64 s"
    assert time_spent(result, SimpleNamespace(wall_s=41.2, profile_s=0.0)) == (
        "measured 64 s, trials 41 s")
    assert time_spent(result, SimpleNamespace(wall_s=52.0, profile_s=11.0)) == (
        "measured 64 s, profiles 11 s, trials 41 s")
