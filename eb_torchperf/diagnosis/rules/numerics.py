"""Fast and wrong is not a win: rows whose results disagree with float64.

Reads `Comparison.numerics` (analysis.numerics.assess: each side's error against a
float64 computation in its own process, on formula inputs, and the row's state):
- `numerics-wrong-result` (error): a norm-wise error of order one on the target --
  a wrong kernel (OpenBLAS has shipped them: DGEMM on SkylakeX,
  https://github.com/OpenMathLib/OpenBLAS/issues/1955; cblas_sgemm "less than half
  accurate", https://github.com/OpenMathLib/OpenBLAS/issues/2914), a BLAS built for
  another CPU, or a library interposed with LD_PRELOAD / LD_LIBRARY_PATH;
- `numerics-reduced-precision` (warning): the target's error above the dtype's bound
  or far above the reference's: a reduced-precision math mode (TF32, bf16;
  https://pytorch.org/docs/stable/notes/numerical_accuracy.html) or denormals
  flushed to zero (-ffast-math, torch.set_flush_denormal).  A row that is also
  faster than the reference is said to be faster because it computes less precisely.

The findings explain no slow row (`@affects` of nothing): precision buys speed.
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison
from eb_torchperf.diagnosis.facts import env_of
from eb_torchperf.present.units import format_percent
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.rules.scope import affects

SOURCE_WRONG = "https://github.com/OpenMathLib/OpenBLAS/issues/2914"
SOURCE_PRECISION = "https://pytorch.org/docs/stable/notes/numerical_accuracy.html"
#: Environment variables that interpose or replace libraries, or switch math modes:
#: shown as evidence when the target sets them.
SUSPECT_ENV = ("LD_PRELOAD", "LD_LIBRARY_PATH", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
               "NVIDIA_TF32_OVERRIDE", "ONEDNN_DEFAULT_FPMATH_MODE", "OPENBLAS_CORETYPE",
               "MKL_CBWR", "FLEXIBLAS")
#: Mechanism -> what it is and how to confirm it (the findings' wording).
MECHANISMS = {
    "wrong-result": "a wrong kernel: a BLAS/oneDNN/cuBLAS built for another CPU or GPU, "
                    "a known-bad library release, or a library put first with LD_PRELOAD "
                    "or LD_LIBRARY_PATH",
    "precision": "a reduced-precision math mode (TF32 or bf16 for fp32: "
                 "torch.backends.cuda.matmul.allow_tf32, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE, "
                 "torch.set_float32_matmul_precision, torch.backends.mkldnn fp32_precision) "
                 "or a less accurate kernel",
    "flush": "denormals flushed to zero (FTZ/DAZ: a library built with -ffast-math turns "
             "them on for the whole process, or torch.set_flush_denormal(True))",
}


#: Mechanism -> its short name for the findings' titles.
LIKELY = {"wrong-result": "a wrong kernel", "precision": "a reduced-precision math mode",
          "flush": "denormals flushed to zero"}


def row_name(c: Comparison) -> str:
    """"matmul_fp32 n=512": the row as the reports name it."""
    params = " ".join("%s=%s" % kv for kv in c.params.items())
    return ("%s %s" % (c.bench, params)).strip()


def _error(side: Optional[dict], numerics: dict, theirs: bool = False) -> Optional[float]:
    if "difference" in numerics:
        return 0.0 if theirs else numerics["difference"]
    return (side or {}).get("norm_rel")


def _evidence(rows: Sequence[Comparison], target: ProbeResult) -> dict:
    evidence = {}
    for c in rows:
        n = c.numerics
        evidence[row_name(c)] = quantity(
            _error(n["target"], n), "rel_error",
            reference=_error(n.get("reference"), n, theirs=True), bound=n["bound"])
        if c.relative_ops is not None and c.significant and c.relative_ops > 1:
            evidence[row_name(c) + " relative OPS"] = quantity(c.relative_ops, "ratio")
    env = env_of(target)
    evidence.update({name: env[name] for name in SUSPECT_ENV if env.get(name)})
    return evidence


def _title(kind: str, rows: Sequence[Comparison]) -> str:
    first = rows[0]
    n = first.numerics
    error, reference = _error(n["target"], n), _error(n.get("reference"), n, theirs=True)
    what = ("loss / gradient norm %.2g apart from the reference's, bound %.2g"
            % (error, n["bound"]) if "difference" in n
            else "error %.2g against float64%s, bound %.2g"
            % (error, "" if reference is None else ", reference %.2g" % reference, n["bound"]))
    likely = " or ".join(sorted({LIKELY[c.numerics.get("mechanism") or "precision"]
                                 for c in rows}))
    kind = "%s, likely %s" % (kind, likely)
    more = " and %d more row%s" % (len(rows) - 1, "" if len(rows) == 2 else "s") \
        if len(rows) > 1 else ""
    faster = [c for c in rows if c.significant and (c.relative_ops or 0) > 1]
    because = ("; %s is faster (%s) because it computes in reduced precision"
               % (row_name(faster[0]), format_percent(faster[0].relative_ops, 0))) if faster else ""
    return "%s: %s (%s)%s%s" % (kind, row_name(first), what, more, because)


def _of_state(comparisons: Sequence[Comparison], state: str) -> List[Comparison]:
    return [c for c in comparisons if c.numerics and c.numerics.get("state") == state]


ADVICE_WRONG = (
    "The target computes wrong results: likely %s.  Do not use this installation until it "
    "is fixed: check which BLAS the target loads (`eb-torchperf explain`, the libraries in "
    "the report), unset LD_PRELOAD / LD_LIBRARY_PATH entries that put another library "
    "first, rebuild the BLAS for this CPU (EasyBuild optarch) or with the easyconfig's "
    "patches for the known-bad kernel, and run PyTorch's own tests (`eb --rebuild` with the "
    "test step).")
ADVICE_REDUCED = (
    "The target computes less precisely than its dtype promises: likely %s.  Where that is "
    "not intended, unset the setting in the module, site profile or container (the "
    "environment shown), or keep it and compare speed against a reference with the same "
    "mode (`--reference-env`).")


@affects(frozenset())
def wrong_result(target: ProbeResult, reference: Optional[ProbeResult],
                 comparisons: Sequence[Comparison]) -> List[Finding]:
    """Rows whose target results are plainly wrong (errors of order one)."""
    rows = _of_state(comparisons, "wrong")
    return [Finding("numerics-wrong-result", "error", _title("Wrong results", rows),
                    _evidence(rows, target), ADVICE_WRONG % MECHANISMS["wrong-result"],
                    SOURCE_WRONG, "target")] if rows else []


@affects(frozenset())
def reduced_precision(target: ProbeResult, reference: Optional[ProbeResult],
                      comparisons: Sequence[Comparison]) -> List[Finding]:
    """Rows whose target error exceeds the dtype's bound or far exceeds the reference's."""
    rows = _of_state(comparisons, "reduced-precision")
    likely = "; or ".join(MECHANISMS[m] for m in sorted(
        {c.numerics.get("mechanism") or "precision" for c in rows}))
    return [Finding("numerics-reduced-precision", "warning", _title("Reduced precision", rows),
                    _evidence(rows, target), ADVICE_REDUCED % likely, SOURCE_PRECISION,
                    "target")] if rows else []


RULES = [wrong_result, reduced_precision]
