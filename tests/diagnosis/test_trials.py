"""Planning remedy trials, checking they took effect, and judging what they recovered."""

import dataclasses
import math

import pytest

from eb_torchperf.measure.interleave import RunnerOptions
from eb_torchperf.analysis.compare import compare
from eb_torchperf.records.measurements import AuditResult
from eb_torchperf.present.terminal_explain import trial_summary
from eb_torchperf.diagnosis.families import GEMM_BENCHES, THREADED_BENCHES
from eb_torchperf.explain_stage.remedies import BlasHost, Trial
from eb_torchperf.explain_stage.trials import (TrialResult, TrialRow, check_effect, combine_trials, judge,
                                 plan_trials, rebuild_needed, summarize_trial)

from explain_helpers import DEBIAN_FACTS, WHEEL_FACTS, bench, golden_facts, probe_from

LIBDIR = "/usr/lib/x86_64-linux-gnu"
DEBIAN_HOST = BlasHost(providers=(LIBDIR + "/blas", LIBDIR + "/openblas-pthread"))
OPENBLAS_LABEL = "libblas.so.3 from openblas-pthread/ (LD_LIBRARY_PATH)"


def debian():
    return probe_from(golden_facts(DEBIAN_FACTS), python="/usr/bin/python3")


def debian_with_openblas():
    """Debian's facts as a child started with the OpenBLAS LD_LIBRARY_PATH would show them."""
    facts = golden_facts(DEBIAN_FACTS)
    facts["mapped_libraries"]["libraries"][:2] = [
        LIBDIR + "/openblas-pthread/libblas.so.3", LIBDIR + "/openblas-pthread/liblapack.so.3",
        LIBDIR + "/openblas-pthread/libopenblasp-r0.3.21.so"]
    return probe_from(facts, python="/usr/bin/python3")


def test_debian_plan():
    trials, skipped = plan_trials(debian(), DEBIAN_HOST)
    assert skipped == []
    assert [t.label for t in trials] == [
        OPENBLAS_LABEL, "OMP_NUM_THREADS=2", "ATEN_CPU_CAPABILITY=avx512",
        OPENBLAS_LABEL + " + OMP_NUM_THREADS=2 + ATEN_CPU_CAPABILITY=avx512"]
    assert trials[0].env == {"LD_LIBRARY_PATH": LIBDIR + "/openblas-pthread"}
    assert trials[0].benches == GEMM_BENCHES
    together = trials[-1]
    assert together.remedy_ids == ("blas-provider-path", "threads-to-cores",
                                   "cpu-capability-raise")
    assert together.rule_ids == ("blas-not-mkl", "threads-vs-cores",
                                 "cpu-capability-low")
    assert together.env == {"LD_LIBRARY_PATH": LIBDIR + "/openblas-pthread",
                            "OMP_NUM_THREADS": "2", "ATEN_CPU_CAPABILITY": "avx512"}
    assert together.benches == THREADED_BENCHES


def test_plan_reruns_only_measured_benchmarks():
    trials, skipped = plan_trials(debian(), DEBIAN_HOST, measured=["matmul_fp32"])
    assert [t.benches for t in trials] == [("matmul_fp32",)] * 3
    assert skipped == [{"remedy_id": "cpu-capability-raise", "rule_id": "cpu-capability-low",
                        "reason": "none of its benchmarks was measured in the baseline"}]


def test_plan_without_another_provider_says_what_to_install():
    trials, skipped = plan_trials(debian(), BlasHost(providers=(LIBDIR + "/blas",)),
                                  combined=False)
    assert [t.label for t in trials] == ["OMP_NUM_THREADS=2", "ATEN_CPU_CAPABILITY=avx512"]
    assert skipped[0]["remedy_id"] == "blas-provider-path"
    assert "apt-get install libopenblas0-pthread" in skipped[0]["reason"]


def test_combine_skips_clashing_settings():
    a = Trial(("threads-to-cores",), ("threads-vs-cores",), "OMP_NUM_THREADS=2",
              {"OMP_NUM_THREADS": "2"}, {"threads": 2}, ("layernorm",))
    b = Trial(("threads-cap-cores",), ("threads-vs-cores",), "OMP_NUM_THREADS=4",
              {"OMP_NUM_THREADS": "4"}, {"threads": 4}, ("gelu",))
    c = Trial(("omp-wait-passive",), ("blas-pthreads-with-openmp",),
              "OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"},
              {"env": {"OMP_WAIT_POLICY": "PASSIVE"}}, ("matmul_fp32",))
    assert combine_trials([a, b]) is None
    together = combine_trials([a, b, c])
    assert together.remedy_ids == ("threads-to-cores", "omp-wait-passive")
    assert together.benches == ("matmul_fp32", "layernorm")


def test_check_effect_reads_the_childs_probe():
    ok, text = check_effect({"blas_dir": LIBDIR + "/openblas-pthread"}, debian_with_openblas())
    assert ok and text.startswith("BLAS mapped: " + LIBDIR + "/openblas-pthread/libblas.so.3")
    ok, text = check_effect({"blas_dir": LIBDIR + "/openblas-pthread"}, debian())
    assert not ok and text == "BLAS mapped: " + LIBDIR + "/blas/libblas.so.3.11.0"
    assert check_effect({"threads": 2}, debian()) == (False, "intra-op threads: 1")
    assert check_effect({"capability": "AVX512"}, debian()) == (False, "CPU capability: AVX2")
    assert check_effect({"capability_above": "DEFAULT"}, debian()) == (True,
                                                                      "CPU capability: AVX2")
    assert check_effect({"env": {"KMP_DUPLICATE_LIB_OK": "True"}}, debian())[0]
    assert check_effect({"openmp_runtimes": 1}, debian()) == (
        True, "OpenMP runtimes: " + LIBDIR + "/libgomp.so.1.0.0")
    assert check_effect({"threads": 1, "capability": "AVX2"}, debian()) == (
        True, "intra-op threads: 1; CPU capability: AVX2")
    assert check_effect({"threads": 2}, None) == (False, "the trial's target process gave no probe")


def audit(target_probe, rows):
    """An AuditResult with three identical rounds per row: {bench: (target s, reference s)}."""
    results = []
    for name, (t, r) in rows.items():
        results += [bench(name, "target", [t] * 3), bench(name, "reference", [r] * 3)]
    return AuditResult("quick", dataclasses.asdict(RunnerOptions()), target_probe,
                       probe_from(golden_facts(WHEEL_FACTS), "reference"), tuple(results))


def test_summarize_trial_sets_after_against_before():
    baseline = audit(debian(), {"matmul_fp32": (0.1, 0.002), "layernorm": (0.01, 0.005)})
    trial = plan_trials(debian(), DEBIAN_HOST)[0][0]
    after = audit(debian_with_openblas(), {"matmul_fp32": (0.004, 0.002),
                                           "layernorm": (0.01, 0.005)})
    result = summarize_trial(trial, compare(baseline), after, compare(after))
    assert result.applied and result.verdict == "partly recovered"
    matmul, layernorm = result.rows
    assert (matmul.bench, matmul.gemm) == ("matmul_fp32", True)
    assert matmul.before == pytest.approx(0.02) and matmul.after == pytest.approx(0.5)
    assert matmul.gain == pytest.approx(25.0)
    assert (layernorm.gemm, layernorm.gain) == (False, pytest.approx(1.0))
    assert result.group(True) == (pytest.approx(0.02), pytest.approx(0.5), 1)
    assert trial_summary(result) == (OPENBLAS_LABEL + ": GEMM rows 2.0 % -> 50 %, other rows "
                                     "50 % -> 50 % of the reference (partly recovered)")
    unchanged = audit(debian(), {"matmul_fp32": (0.004, 0.002)})
    same = summarize_trial(trial, compare(baseline), unchanged, compare(unchanged))
    assert (same.applied, same.verdict) == (False, "not applied")


def rows(gain, after):
    return [TrialRow("gelu", {}, False, after / gain, after)]


@pytest.mark.parametrize("gain, after, verdict", [
    (1.049, 0.5, "no effect"), (1 / 1.049, 0.5, "no effect"), (1.051, 0.5, "partly recovered"),
    (1.051, 0.951, "recovered"), (1.051, 0.949, "partly recovered"), (1 / 1.051, 0.5, "worse")])
def test_judge_at_the_aa_floor(gain, after, verdict):
    assert judge(True, None, rows(gain, after), 0.05) == verdict


def test_judge_failed_and_not_applied():
    assert judge(True, "target died", [], 0.05) == "failed"
    assert judge(False, None, rows(2.0, 1.0), 0.05) == "not applied"
    assert judge(True, None, [TrialRow("gelu", {}, False, None, 0.5)], 0.05) == "no effect"


def test_trial_result_json_round_trip():
    baseline = audit(debian(), {"matmul_fp32": (0.1, 0.002)})
    trial = plan_trials(debian(), DEBIAN_HOST)[0][0]
    after = audit(debian_with_openblas(), {"matmul_fp32": (0.004, 0.002)})
    result = summarize_trial(trial, compare(baseline), after, compare(after))
    data = result.to_json()
    assert data["rows"][0]["gain"] == pytest.approx(25.0)
    assert "summary" not in data  # wording is present/'s (terminal_explain.trial_summary)
    again = TrialResult.from_json(data)
    assert again.rows == result.rows and again.trial == result.trial
    assert again.audit.results == result.audit.results


def result_of(trial, verdict, after=0.5):
    return TrialResult(trial, verdict != "not applied", "", (
        TrialRow("gelu", {}, False, 0.25, after),), verdict)


def test_rebuild_needed():
    blas, threads, capability, together = plan_trials(debian(), DEBIAN_HOST)[0]
    results = [result_of(blas, "partly recovered"), result_of(threads, "no effect"),
               result_of(capability, "not applied"), result_of(together, "partly recovered")]
    out = rebuild_needed(results, ["blas-not-mkl", "mkl-missing"])
    assert out[0] == {"rule_id": "mkl-missing",
                      "why": "no run-time remedy: change the easyconfig and rebuild"}
    assert out[1]["rule_id"] == "cpu-capability-low"
    assert out[1]["why"].startswith("run-time remedies did not help (ATEN_CPU_CAPABILITY=avx512:"
                                    " not applied): the build has no kernels")
    assert out[2] == {"rule_id": None, "why": "with all run-time remedies together the re-run "
                      "rows reach 0.50 of the reference (geometric mean); the remaining gap is "
                      "build-time"}
    assert len(out) == 3  # threads had no effect, but a thread count is not a build setting
    assert math.isclose(results[-1].residual, 0.5)
    assert rebuild_needed([result_of(together, "recovered", after=0.97)]) == []


def test_raised_capability_that_took_effect_needs_no_rebuild():
    _, _, capability, _ = plan_trials(debian(), DEBIAN_HOST)[0]
    took_effect_but_worse = TrialResult(capability, True, "CPU capability: AVX512",
                                        (TrialRow("gelu", {}, False, 0.53, 0.44),), "worse")
    assert rebuild_needed([took_effect_but_worse]) == [
        {"rule_id": None, "why": "with ATEN_CPU_CAPABILITY=avx512 the re-run rows reach 0.44 "
         "of the reference (geometric mean); the remaining gap is build-time"}]


def test_an_inconclusive_trial_row_is_read_from_its_estimate():
    """A one-pair trial row is often inconclusive (no relative OPS): before/after use
    its estimate, so an H200 trial of a TF32 override read 12 % -> 99 %, not 12 % -> ?."""
    import dataclasses as dc

    from eb_torchperf.explain_stage.trials import _ratio
    from auditcases import bench_pair, compare_pair

    target, reference = bench_pair("matmul_fp32", {"n": 512}, 0.5)
    row = compare_pair([target], [reference])
    assert _ratio(row) == row.relative_ops
    vague = dc.replace(row, relative_ops=None, inconclusive=True, estimate=0.93)
    assert _ratio(vague) == 0.93
