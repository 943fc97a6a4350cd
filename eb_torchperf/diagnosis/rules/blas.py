"""BLAS and MKL rules: the cause the EasyBuild thread found first.

In https://github.com/easybuilders/easybuild/issues/931 the EasyBuild source build
of PyTorch 2.9.1 (`BLAS_INFO=flexi`) ran TorchBench CPU inference at 21-46 % of the
upstream wheel (MKL) on average, whichever FlexiBLAS backend was selected at run
time (OpenBLAS 27.9 %, BLIS 20.8 %, AOCL 38.7 %, imkl 46.0 %), and BERT_pytorch at
0.8-19 % (shared/cases/torchbench/easybuild-931-relative-ops.csv).  These rules combine the build config with the measured GEMM rate: the
config says why, the measurement says how much it matters on this machine.
"""

from typing import List, Optional, Sequence

from eb_torchperf.analysis.compare import Comparison, thread_scaling
from eb_torchperf.analysis.model_rows import models_geomean
from eb_torchperf.present.units import format_ratio
from eb_torchperf.records.findings import Finding, quantity
from eb_torchperf.records.measurements import ProbeResult
from eb_torchperf.diagnosis.bounds import LOSS_ERROR, LOSS_WARNING, grade_low, lower_limits
from eb_torchperf.diagnosis.evidence import (GEMM_BENCHES, SOURCE_931, family_ratio, gemm_rows,
                                            grade_gemm_peak, is_x86_64, rate_evidence,
                                            ratio_evidence, upstream, with_ratio)
from eb_torchperf.diagnosis.facts import pools, torch_blas
from eb_torchperf.diagnosis.rules.scope import CPU_GEMM, CUDA_STARTUP, affects, families  # noqa: F401

SOURCE_EASYBLOCK = ("https://github.com/easybuilders/easybuild-easyblocks/blob/develop/"
                    "easybuild/easyblocks/p/pytorch.py")
SOURCE_OPENBLAS_FAQ = "https://github.com/OpenMathLib/OpenBLAS/wiki/Faq#multi-threaded"
SOURCE_MKL_BACKEND = "https://pytorch.org/docs/stable/backends.html#torch-backends-mkl"


ADVICE_BLAS = (
    "Build PyTorch against MKL: add imkl to the easyconfig's dependencies, e.g. "
    "('imkl', '<version of your toolchain generation>', '', SYSTEM); the PyTorch easyblock "
    "then builds with BLAS=MKL instead of BLAS=FlexiBLAS. A run-time backend switch is only "
    "a stop-gap: #931 measured FlexiBLAS with imkl at 46 % of the wheel on average.")
ADVICE_BY_KIND = {
    "FlexiBLAS": " Meanwhile select the fastest installed backend in the module, e.g. "
                 "modextravars = {'FLEXIBLAS': 'IMKL'} (AOCL on AMD CPUs).",
    "reference BLAS": " The reference BLAS is unoptimised and single-threaded: a system "
                      "libblas.so.3 (Debian/Ubuntu alternatives) can be switched to OpenBLAS "
                      "or BLIS at run time.",
}
ADVICE_MKL = (
    "Add imkl to the easyconfig's dependencies (the PyTorch easyblock then sets BLAS=MKL and "
    "USE_MKL); with a GCC toolchain set MKL_THREADING_LAYER=GNU through modextravars so MKL "
    "uses the same libgomp as PyTorch.")
ADVICE_PTHREADS = (
    "Give OpenBLAS the OpenMP threading layer PyTorch uses: build the OpenBLAS dependency with "
    "USE_OPENMP=1 (buildopts), or use FlexiBLAS with an OpenMP backend. At run time "
    "OMP_WAIT_POLICY=PASSIVE stops idle OpenMP threads spinning while OpenBLAS threads work.")


def _severity_from_reference(rows, reference) -> Optional[tuple]:
    ratio = family_ratio(rows)
    if ratio is None or reference is None or reference.build.blas_info != "mkl":
        return None
    evidence = {"GEMM relative OPS, geometric mean": quantity(ratio, "ratio"),
                "bounds": lower_limits(LOSS_ERROR, LOSS_WARNING)}
    evidence.update(ratio_evidence(rows))
    return grade_low(ratio, LOSS_ERROR, LOSS_WARNING), evidence, ratio


def _severity_from_models(comparisons, reference) -> Optional[tuple]:
    """Without a GEMM row (`--suite models`), the models' geometric mean against an MKL
    reference grades the finding with the GEMM bounds: Debian's reference-BLAS torch ran
    the models at 7.7 % of the wheel and the finding read "warning", so the audit
    exited 0 where the quick suite's (21 %) exited 1 (issue 17)."""
    ratio = models_geomean(comparisons)
    if ratio is None or reference is None or reference.build.blas_info != "mkl":
        return None
    evidence = {"GEMM measured": "no (models suite)",
                "models relative OPS, geometric mean": quantity(ratio, "ratio"),
                "bounds": lower_limits(LOSS_ERROR, LOSS_WARNING)}
    return grade_low(ratio, LOSS_ERROR, LOSS_WARNING), evidence, None


def _speedup_evidence(comparisons) -> dict:
    """GEMM speed-up from 1 thread to all cores per side: a single-threaded BLAS
    (the reference BLAS) shows ~1x where MKL shows ~cores x."""
    evidence = {}
    for side in ("target", "reference"):
        speedup = thread_scaling(comparisons, side)
        if speedup is not None:
            evidence["GEMM speed-up 1 thread → all cores, %s" % side] = quantity(speedup, "x")
    return evidence


@affects(families("cpu", only=CPU_GEMM + ("conv",)))
def blas_not_mkl(target: ProbeResult, reference: Optional[ProbeResult],
                 comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 1: BLAS not MKL on x86-64, graded by the measured GEMM rate.

    Severity: GEMM relative OPS against an MKL reference (LOSS_ERROR / LOSS_WARNING);
    without one, the GEMM fraction of nominal peak (evidence.PEAK_ERROR / PEAK_WARNING);
    without a GEMM measurement, warning.  Sources: #931 (SOURCE_931) for the effect,
    the PyTorch easyblock (SOURCE_EASYBLOCK: imkl -> BLAS=MKL) for the remedy.
    """
    blas_info = target.build.blas_info
    if not is_x86_64(target) or not blas_info or blas_info == "mkl":
        return []
    library = torch_blas(target)
    kind = library.kind if library else "unknown"
    graded = _severity_from_reference(gemm_rows(comparisons), reference)
    if graded is None:
        graded = _severity_from_models(comparisons, reference)
    if graded is None:
        peak = grade_gemm_peak(target, comparisons)
        graded = (peak[0], peak[1], None) if peak else ("warning", {"GEMM measured": "no"}, None)
    severity, perf, ratio = graded
    evidence = {"BLAS_INFO": blas_info, "LAPACK_INFO": target.build.lapack_info,
                "BLAS library loaded": library.describe() if library else "not found"}
    view = upstream(target, reference)
    if view is not None:
        evidence["upstream"] = "%s: BLAS_INFO=%s" % (view.label, view.blas_info)
    evidence.update(perf)
    evidence.update(_speedup_evidence(comparisons))
    title = "PyTorch's BLAS is %s (BLAS_INFO=%s), not MKL" % (kind, blas_info)
    if ratio is not None:
        title += ": GEMM at %s of the reference" % format_ratio(ratio)
    return [Finding("blas-not-mkl", severity, title, evidence,
                    ADVICE_BLAS + ADVICE_BY_KIND.get(kind, ""), SOURCE_931, "target")]


@affects(families("cpu", only=CPU_GEMM + ("conv",)))
def mkl_missing(target: ProbeResult, reference: Optional[ProbeResult],
                comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 2: MKL missing on x86-64 (`USE_MKL` off, or no MKL line before torch 2.0).

    Warning when the upstream build (reference, else the bundled wheel data) has MKL:
    besides GEMM, MKL serves LAPACK (torch.linalg), FFT and sparse kernels.
    Source: torch.backends.mkl (SOURCE_MKL_BACKEND); easyblock (SOURCE_EASYBLOCK).
    """
    if not is_x86_64(target) or target.build.use_mkl is not False:
        return []
    view = upstream(target, reference)
    evidence = {"USE_MKL": target.build.settings.get(
                    "USE_MKL", "not printed; no MKL line in torch.__config__.show()"),
                "torch.backends.mkl.is_available()": target.fact("torch", "mkl_available"),
                "LAPACK_INFO": target.build.lapack_info}
    if view is not None:
        evidence["upstream"] = "%s: MKL %s" % (view.label, "yes" if view.use_mkl else "no")
    severity = "warning" if view is not None and view.use_mkl else "info"
    return [Finding("mkl-missing", severity,
                    "PyTorch is built without MKL: LAPACK, FFT and sparse kernels use "
                    "fallback libraries", evidence, ADVICE_MKL, SOURCE_MKL_BACKEND, "target")]


@affects(families("cpu", only=CPU_GEMM + ("conv",)))
def blas_pthreads_oversubscription(target: ProbeResult, reference: Optional[ProbeResult],
                                   comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 5: torch's BLAS runs its own pthreads pool beside torch's OpenMP threads.

    Both pools size themselves to the cores, so a GEMM called from torch's parallel
    regions, or while OpenMP threads spin-wait, runs more threads than cores.
    Source: OpenBLAS FAQ (SOURCE_OPENBLAS_FAQ), threadpoolctl threading_layer.
    """
    if target.build.blas_info in (None, "mkl"):
        return []
    blas = [p for p in pools(target, "blas")
            if p.get("threading_layer") == "pthreads" and (p.get("num_threads") or 0) > 1]
    omp_threads = max([p.get("num_threads") or 0 for p in pools(target, "openmp")]
                      + [target.fact("torch", "intra_op_threads") or 0])
    if not blas or omp_threads <= 1:
        return []
    cores = target.fact("cpu", "allowed_cores")
    evidence = {"BLAS pool": "%s %s: pthreads, %d threads"
                             % (blas[0].get("internal_api"), blas[0].get("filepath"),
                                blas[0]["num_threads"]),
                "OpenMP threads": omp_threads, "allowed cores": cores,
                "threads that can run at once": blas[0]["num_threads"] + omp_threads - 1}
    return [Finding("blas-pthreads-with-openmp", "warning",
                    "BLAS threads (pthreads) compete with PyTorch's OpenMP threads",
                    evidence, ADVICE_PTHREADS, SOURCE_OPENBLAS_FAQ, "target")]


@affects(families("cpu", only=CPU_GEMM))
def mkl_on_amd(target: ProbeResult, reference: Optional[ProbeResult],
               comparisons: Sequence[Comparison]) -> List[Finding]:
    """Class 12: MKL on an AMD CPU: informational, with the measured GEMM rate.

    MKL picks its kernels by CPU; #931 (SOURCE_931) measured AOCL ahead of imkl
    as FlexiBLAS backend on several models, so the GEMM figure is worth a look.
    """
    if target.fact("cpu", "vendor") != "AuthenticAMD" or not target.build.use_mkl:
        return []
    rows = with_ratio(comparisons, GEMM_BENCHES) or [
        c for c in comparisons if c.bench in GEMM_BENCHES and c.target is not None]
    evidence = {"CPU": "%s %s" % (target.fact("cpu", "vendor"), target.fact("cpu", "model")),
                "MKL": target.build.mkl_version}
    evidence.update(rate_evidence(rows))
    evidence.update(ratio_evidence(with_ratio(rows, GEMM_BENCHES)))
    return [Finding("mkl-on-amd", "info", "MKL runs on an AMD CPU", evidence,
                    "Informational. If GEMM is low against the reference, compare AOCL-BLAS "
                    "(AOCL-BLAS easyconfig; FLEXIBLAS=AOCL with a FlexiBLAS build).",
                    SOURCE_931, "target")]


RULES = [blas_not_mkl, mkl_missing, blas_pthreads_oversubscription, mkl_on_amd]
