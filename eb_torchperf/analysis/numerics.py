"""Numerical agreement of one row: the two sides' errors against float64, judged.

Each side's worker measured its error on formula inputs (probe.numerics: `max_rel`,
`norm_rel`, `flushed`, `bound`; whole models `loss`, `grad_norm`).  `assess` turns the
target's and the reference's into the row's `Comparison.numerics`:

    {"target": {...}, "reference": {...} or None, "bound": float,
     "state": "agree" | "reduced-precision" | "wrong",
     "mechanism": None | "flush" | "precision" | "wrong-result",
     "difference": float (model rows: relative difference of loss / gradient norm)}

States (thresholds below, with their sources):
- wrong: the target's norm-wise error is of order one (WRONG_REL): no precision mode
  loses that much (bf16, the coarsest, has u = 2**-8 = 0.4 %); a wrong kernel does
  (OpenBLAS issue 2914: sgemm "less than half accurate",
  https://github.com/OpenMathLib/OpenBLAS/issues/2914);
- reduced-precision: results flushed to zero where float64 gives a subnormal
  (mechanism "flush"), or the error above the dtype's bound, or FAR_ABOVE times the
  reference's and above a tenth of the bound (mechanism "precision": TF32/bf16 math
  modes raise the error 100-10,000-fold, u 2**-11 / 2**-8 against 2**-24);
- agree otherwise.
"""

from typing import Optional, Sequence

#: Norm-wise relative error from which a result is wrong, not imprecise: 25 %, 60x bf16's
#: unit roundoff (2**-8), the coarsest math mode a build may switch on.
WRONG_REL = 0.25
#: The target's error this many times the reference's is a precision loss (the math
#: modes raise it 100-fold and more: fp32 2**-24 against TF32 2**-11).
FAR_ABOVE = 10.0
#: Relative difference of a model's loss and gradient norm between two correct builds,
#: per precision.  fp32: the wheel 2.13.0 against Debian's torch 1.13 (reference BLAS)
#: on the 2-core dev VM (issue 30) gave equal losses and gradient norms 1.9e-4 apart
#: (resnet50 at batch 1: batch norm over one image), 8e-5 (regnet_y_400mf), below 1e-7
#: for the others; 1e-2 leaves 50x for deeper models and other BLAS, and stays 25x
#: below a wrong result.  bf16 autocast (CUDA inference): 2**-8 per operation.
MODEL_BOUND = {"float32": 1e-2, "bfloat16": 5e-2}


def side_numerics(results: Sequence) -> dict:
    """The first non-empty BenchResult.numerics of one side's results ({} if none)."""
    return next((dict(r.numerics) for r in results if getattr(r, "numerics", None)), {})


def _usable(numerics: Optional[dict]) -> bool:
    return bool(numerics) and "error" not in numerics


def assess(target: Optional[dict], reference: Optional[dict]) -> Optional[dict]:
    """The row's numerics (module docstring); None where the target has none."""
    if not _usable(target):
        return None
    reference = reference if _usable(reference) else None
    if "loss" in target:
        return _assess_model(target, reference)
    bound = float(target["bound"])
    error = float(target["norm_rel"])
    theirs = float(reference["norm_rel"]) if reference and "norm_rel" in reference else None
    mechanism = None
    if target.get("flushed") and not (reference or {}).get("flushed"):
        mechanism = "flush"
    elif error >= WRONG_REL:
        mechanism = "wrong-result"
    elif error > bound or (theirs is not None and error > FAR_ABOVE * theirs
                           and error > bound / FAR_ABOVE):
        mechanism = "precision"
    return {"target": target, "reference": reference, "bound": bound,
            "state": _state(mechanism), "mechanism": mechanism}


def _state(mechanism: Optional[str]) -> str:
    if mechanism is None:
        return "agree"
    return "wrong" if mechanism == "wrong-result" else "reduced-precision"


def _relative(mine: float, theirs: float) -> float:
    return abs(mine - theirs) / max(abs(theirs), 1e-30)


def _assess_model(target: dict, reference: Optional[dict]) -> Optional[dict]:
    """Model rows: the target's loss and gradient norm against the reference's."""
    if reference is None or "loss" not in reference:
        return None
    bound = MODEL_BOUND.get(str(target.get("dtype")), MODEL_BOUND["float32"])
    keys = [k for k in ("loss", "grad_norm") if k in target and k in reference]
    difference = max(_relative(float(target[k]), float(reference[k])) for k in keys)
    mechanism = None
    if difference >= WRONG_REL:
        mechanism = "wrong-result"
    elif difference > bound:
        mechanism = "precision"
    return {"target": target, "reference": reference, "bound": bound,
            "state": _state(mechanism), "mechanism": mechanism, "difference": difference}
