"""eb_torchperf.reframe.metrics: performance variables and sanity from audit results."""

from eb_torchperf.reframe.metrics import Metric, perf_metrics, sanity_problems

from testdata import record

from .builders import audit_result, bench, finding


def test_metrics_per_benchmark_with_units():
    metrics = perf_metrics(record(audit_result("AMD EPYC 9654", 0.5)))
    assert [(m.name, m.unit) for m in metrics] == [
        ("matmul_fp32", "x"), ("matmul_fp32_target", "GFLOP/s"),
        ("matmul_fp32_reference", "GFLOP/s"), ("dispatch", "x"), ("dispatch_target", "µs/op"),
        ("dispatch_reference", "µs/op"), ("geomean", "x")]
    values = {m.name: round(m.value, 6) for m in metrics}
    assert values["matmul_fp32"] == 0.5
    assert values["matmul_fp32_target"] == 1000.0 and values["matmul_fp32_reference"] == 2000.0
    assert values["dispatch_target"] == 2.0
    assert values["geomean"] == round(0.5 ** 0.5, 6)


def test_several_parameter_sets_are_named_without_colons():
    result = audit_result("AMD EPYC 9654", 1.0)
    extra = (bench("thread_scaling", "target", 0.001, 1e9, "flop", {"threads": 1}),
             bench("thread_scaling", "target", 0.001, 1e9, "flop", {"threads": "all"}))
    result = result.__class__(**{**result.__dict__, "results": extra})
    assert perf_metrics(record(result)) == [
        Metric("thread_scaling[threads=1]_target", 1000.0, "GFLOP/s"),
        Metric("thread_scaling[threads=all]_target", 1000.0, "GFLOP/s")]


def _sane(result):
    """sanity_problems with the analysis the check hands it (analysed_results)."""
    from eb_torchperf.workflows.analyse import analyse
    return sanity_problems(result, analyse(result, keep_findings=True))


def test_sanity_problems():
    assert _sane(audit_result("AMD EPYC 9654", 1.0)) == []
    assert sanity_problems(None, None) == ["the audit wrote no results file (see the job's stderr)"]
    cut = audit_result("x", 1.0, complete=False, errors=[{"message": "worker hung"}])
    assert _sane(cut) == ["the audit was cut short: worker hung",
                                    "the audit measured nothing"]
    bad = audit_result("x", 1.0, findings=[finding("error", "march-native"), finding()])
    assert _sane(bad) == ["error finding march-native: BLAS is OpenBLAS, not MKL"]


def test_no_results_file_gives_no_metrics():  # issue 27 #18: `reframe --dry-run`
    assert perf_metrics(None) == []


def test_an_empty_launcher_is_one_config_error():  # issue 27 #18: was IndexError
    import pytest
    check = pytest.importorskip("eb_torchperf.reframe.torchperf_check",
                                reason="ReFrame not installed")
    from eb_torchperf.errors import ConfigError
    with pytest.raises(ConfigError, match="launcher is empty: give the command that runs "
                                          "eb-torchperf, e.g. "):
        check.launcher_words("  ")
    with pytest.raises(ConfigError, match="No closing quotation"):
        check.launcher_words("python '-m")
    assert check.launcher_words("/sw/python -m eb_torchperf.cli") == [
        "/sw/python", "-m", "eb_torchperf.cli"]
