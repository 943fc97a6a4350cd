"""Numerical agreement of one row: its output on formula inputs against float64.

Each side computes a row's operation once per worker (first pair only, outside the
timed blocks: measure.interleave asks for it after the rounds), on inputs built from a
formula rather than a torch RNG (whose streams differ between versions): a quadratic
Weyl sequence ``frac(i * ALPHA + i**2 * BETA)`` mapped to [-1, 1), computed in float64
with multiplications and additions only, so both sides start from the same bits.  The
values are rounded to the row's dtype first, then the same computation runs in the row's
dtype and in float64 on those rounded values: the error measures the computation, not
the rounding of the inputs.

Per row (BenchResult.numerics):
  max_rel: max_i |out_i - ref_i| / max(|ref_i|, rms(ref)) -- each element relative to
      itself, or to the output's RMS where it is smaller (an element that cancels to
      near zero has a meaningless relative error);
  norm_rel: ||out - ref||_2 / ||ref||_2 (Higham, "Accuracy and Stability of Numerical
      Algorithms", 2nd ed., SIAM 2002, sec. 1.2, norm-wise relative error);
  bound: LAMBDA * CHAIN * (u_row + sqrt(K) * u_acc), the expected norm-wise error of a
      K-long inner product (probabilistic rounding error analysis: Higham & Mary, "A New
      Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5),
      2019, Thm 3.1, https://doi.org/10.1137/18M1226312: the error of an inner product
      of length K is at most lambda * sqrt(K) * u with probability 1 - 2 exp(-lambda^2/2));
      u_row is the unit roundoff of the row's dtype (the output's rounding), u_acc that
      of the accumulation (float32 for bf16/fp16, as ATen and cuBLAS accumulate);
  flushed: elements whose float64 result is a nonzero subnormal of the row's dtype and
      whose output is exactly zero (flush-to-zero / denormals-are-zero).
Whole models record `loss` and `grad_norm` instead (numerics_checks.model_numerics):
the two sides are compared with each other.

Standard library only at import; torch is passed in.
"""

import math
import zlib

#: Weyl sequence constants: frac(sqrt(2)), frac(sqrt(3)) / 1000 (irrational, so the
#: sequence does not repeat; any such pair would do).
ALPHA = 0.41421356237309515
BETA = 0.7320508075688772e-3
#: Unit roundoff u = 2**-p of each dtype (Higham 2002, table 2.1; bfloat16: 8-bit
#: significand, tf32: 11-bit, https://docs.nvidia.com/cuda/cublas/#cublasmath-t).
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "tf32": 2.0 ** -11,
                 "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
#: Accumulation precision per row precision: half types accumulate in float32.
ACCUMULATE = {"bfloat16": "float32", "float16": "float32", "tf32": "float32"}
#: lambda of Higham & Mary 2019 Thm 3.1: the bound fails with probability
#: 2 exp(-lambda^2 / 2) = 2.5e-14 at lambda 8, per inner product.
LAMBDA = 8.0
#: Weights repeat the formula's first WEIGHT_PERIOD values (a prime: a row of any
#: width starts elsewhere in it): alexnet's 61 M weights cost seconds to compute each.
WEIGHT_PERIOD = 65521
#: Errors are stored up to this (a non-finite output reads as this: JSON has no inf).
ERROR_CAP = 1.0e9


def formula(torch, numel, salt=0, device="cpu"):
    """`numel` float64 values in [-1, 1) from the Weyl sequence, offset by `salt`
    (separate multiply and add kernels, in place: no fused multiply-add changes the
    bits, and a 7 M-element weight costs ~0.1 s)."""
    x = torch.arange(numel, dtype=torch.float64, device=device)
    x.add_(float(salt % 9973) * 7919.0)
    linear = x * ALPHA
    x.mul_(x).mul_(BETA).add_(linear)
    return x.frac_().mul_(2.0).sub_(1.0)


def salt_of(name):
    """A stable salt for a parameter name (crc32: the same in every Python)."""
    return zlib.crc32(name.encode("utf-8"))


class Maker:
    """Builds formula tensors and modules for one computation of a check.

    Attributes:
        torch: the imported torch.
        dtype: torch dtype the computation runs in (the row's, or float64).
        storage: torch dtype the values are rounded to first (the row's).
        device: "cpu" or "cuda".
        precision: the row's precision name (UNIT_ROUNDOFF key; "tf32" for fp32 rows
            with TF32 allowed).
    """

    def __init__(self, torch, dtype, storage, device="cpu", precision="float32", cache=None):
        self.torch, self.dtype, self.storage = torch, dtype, storage
        self.device, self.precision = device, precision
        #: (numel, salt) -> formula values, shared by a check's two computations
        self.cache = {} if cache is None else cache

    @property
    def exact(self):
        """True for the float64 reference computation."""
        return self.dtype == self.torch.float64

    def tensor(self, *shape, salt=0, scale=1.0, period=None):
        """A formula tensor of `shape`, rounded to the row's dtype, in `dtype`; with
        `period`, the first `period` values repeated (a cheap fill for large weights)."""
        numel = 1
        for size in shape:
            numel *= size
        count = numel if period is None else min(numel, period)
        key = (count, salt)
        if key not in self.cache:
            self.cache[key] = formula(self.torch, count, salt, self.device)
        values = self.cache[key]
        if count < numel:
            values = values.repeat(-(-numel // count))[:numel]
        values = values.reshape(shape) * scale
        return values.to(self.storage).to(self.dtype)

    def indices(self, count, high, salt=0):
        """`count` int64 indices in [0, high) from the formula."""
        values = (formula(self.torch, count, salt, self.device) + 1.0) * 0.5 * high
        return values.long().clamp(0, high - 1)

    def _parameter(self, name, param):
        if param.dim() > 1:
            scale = 1.0 / math.sqrt(max(1, param[0].numel()))
            return self.tensor(*param.shape, salt=salt_of(name), scale=scale,
                               period=WEIGHT_PERIOD)
        values = self.tensor(*param.shape, salt=salt_of(name), scale=0.1)
        if name.endswith("weight"):
            values = (values.double() + 1.0).to(self.storage)
        return values

    def module(self, module):
        """Fill `module`'s parameters from the formula (2-D and more: scaled by
        1/sqrt(fan-in), repeating every WEIGHT_PERIOD values; 1-D weights 1 + 0.1 f,
        1-D biases 0.1 f) and move it to dtype and device."""
        torch = self.torch
        with torch.no_grad():
            for name, param in module.named_parameters():
                key = ("parameter", name, tuple(param.shape))
                if key not in self.cache:  # the check's other computation reuses it
                    self.cache[key] = self._parameter(name, param)
                param.copy_(self.cache[key].to(param.device, param.dtype))
        return module.to(device=self.device, dtype=self.dtype)


def bound(precision, depth, chain=1):
    """Expected norm-wise relative error (see the module docstring).

    Args:
        precision: UNIT_ROUNDOFF key of the row.
        depth: K, the longest sum one output element accumulates.
        chain: operations chained in the row (a layer: its GEMMs, norm, softmax), each
            adding its own rounding.
    """
    u_row = UNIT_ROUNDOFF[precision]
    u_acc = UNIT_ROUNDOFF[ACCUMULATE.get(precision, precision)]
    return LAMBDA * chain * (u_row + math.sqrt(max(1, depth)) * u_acc)


def _part_errors(torch, out, ref, storage):
    o = out.detach().to(torch.float64).reshape(-1)
    r = ref.detach().to(torch.float64).reshape(-1)
    if o.numel() == 0:
        return 0.0, 0.0, 0
    ref_norm = float(r.norm())
    floor = max(ref_norm / math.sqrt(r.numel()), 1e-300)
    diff = (o - r).abs()
    finite = bool(torch.isfinite(o).all())
    max_rel = float((diff / r.abs().clamp(min=floor)).max()) if finite else ERROR_CAP
    norm_rel = float(diff.norm()) / max(ref_norm, 1e-300) if finite else ERROR_CAP
    tiny = torch.finfo(storage).tiny
    subnormal = (r.abs() < tiny) & (r != 0)
    flushed = int((subnormal & (o == 0)).sum())
    return min(max_rel, ERROR_CAP), min(norm_rel, ERROR_CAP), flushed


def errors(torch, out, ref, storage):
    """{max_rel, norm_rel, flushed} of `out` against the float64 `ref`; tuples of
    tensors (an output and its gradients) give the largest error of any part."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    parts = [_part_errors(torch, o, r, storage) for o, r in zip(outs, refs)]
    return {"max_rel": max(p[0] for p in parts), "norm_rel": max(p[1] for p in parts),
            "flushed": sum(p[2] for p in parts)}


def measure(torch, check, params, device="cpu"):
    """Run `check` in the row's dtype and in float64; its numerics dict.

    Args:
        check: numerics_checks.Check of the row.
        params: the row's params.
    Returns:
        {"max_rel", "norm_rel", "flushed", "dtype", "bound", "depth"} (see module doc).
    """
    precision = check.precision(params)
    storage = getattr(torch, "float32" if precision == "tf32" else precision)
    cache = {}
    row = Maker(torch, storage, storage, device, precision, cache)
    exact = Maker(torch, torch.float64, storage, device, precision, cache)
    found = errors(torch, check.compute(torch, params, row), check.compute(torch, params, exact),
                   storage)
    depth = check.depth(params)
    return dict(found, dtype=precision, depth=depth, bound=bound(precision, depth, check.chain))
