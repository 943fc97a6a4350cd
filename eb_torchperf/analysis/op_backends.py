"""Which backend an ATen operator runs on: the canonical operator names across torch
versions, the BLAS / oneDNN / vectorised / other backends, and the intensity tags the
probe puts on GEMM calls (used by analysis.profile_diff and the explain stage)."""

import dataclasses
import re
from typing import Optional

#: Operator renames across the torch versions the probe supports (>= 1.12): the old
#: name maps to the current one, so both sides align on the same kernel.
OP_RENAMES = {
    # The slow (im2col + GEMM) convolution; older releases call it thnn_conv2d_*, later
    # ones _slow_conv2d_* (the name used in pytorch/pytorch#68896, Nov 2021).
    "aten::thnn_conv2d_forward": "aten::_slow_conv2d_forward",
    "aten::thnn_conv2d_backward": "aten::_slow_conv2d_backward",
    # Per-backend convolution backwards merged into one op (pytorch/pytorch#65219).
    "aten::mkldnn_convolution_backward": "aten::convolution_backward",
    "aten::slow_conv2d_backward": "aten::_slow_conv2d_backward",
    # Functional batch-norm variants of torch >= 2.1; the same CPU kernel.
    "aten::_native_batch_norm_legit": "aten::native_batch_norm",
    "aten::_native_batch_norm_legit_no_training": "aten::native_batch_norm",
}


@dataclasses.dataclass(frozen=True)
class Backend:
    """What an operator's CPU time depends on.

    Attributes:
        key: stable identifier ("blas", "conv", ...).
        title: one line for reports.
        pattern: regular expression over canonical operator names.
        depends_on: the build or run-time settings that decide its speed.
    """

    key: str
    title: str
    pattern: str
    depends_on: str

    def matches(self, op: str) -> bool:
        """True if canonical operator name `op` runs on this backend."""
        return re.match(self.pattern, op) is not None


#: First match wins; "other" catches the rest.  Kernel choice from ATen's sources
#: (aten/src/ATen/native/{LinearAlgebra,Convolution,EmbeddingBag}.cpp, native/cpu/).
BACKENDS = (
    Backend("blas", "BLAS or oneDNN (GEMM)",
            r"^aten::(addmm_?|_addmm_activation|mm|bmm|baddbmm_?|addbmm_?|matmul|linear|"
            r"addmv_?|mv|dot|vdot|addr_?|mkldnn_matmul|_mkl_linear|mkldnn_linear)$",
            "the BLAS library (BLAS_INFO: MKL in wheels; FlexiBLAS backend) and its threads"),
    Backend("conv", "convolution: oneDNN / NNPACK / thnn",
            r"^aten::(conv\d?d?\w*|_convolution\w*|convolution\w*|mkldnn_convolution\w*|"
            r"_slow_conv2d\w*|slow_conv\w*|_nnpack\w*|thnn_conv\w*)$",
            "USE_MKLDNN (oneDNN), USE_NNPACK; the slow path is im2col + BLAS"),
    Backend("attention", "fused attention kernels",
            r"^aten::(_scaled_dot_product\w*|scaled_dot_product_attention|"
            r"_native_multi_head_attention|_transform_bias_rescale_qkv|_masked_softmax\w*|"
            r"_transformer_encoder_layer_fwd)$",
            "ATen vectorised kernels (CPU capability); the math path calls BLAS bmm"),
    Backend("embedding", "embedding_bag: ATen / FBGEMM",
            r"^aten::(_?embedding\w*|index_select|index_add_?)$",
            "USE_FBGEMM and ATen vectorised kernels (CPU capability)"),
    Backend("vectorised", "ATen vectorised kernels (CPU capability)",
            r"^aten::(_?softmax\w*|_?log_softmax\w*|\w*layer_norm\w*|gelu\w*|\w*batch_norm\w*|"
            r"relu_?|threshold\w*|clamp\w*|add_?|sub_?|mul_?|div_?|sum|mean|fill_|zero_|copy_|"
            r"sigmoid\w*|tanh\w*|exp_?|cat|where|native_dropout\w*|dropout|pow|sqrt|rsqrt)$",
            "CPU capability (ATEN_CPU_CAPABILITY: DEFAULT/AVX2/AVX512) and intra-op threads"),
    Backend("autograd", "autograd engine",
            r"^(autograd::|\w+Backward\d*$)",
            "Python and autograd overhead (per op, not per FLOP)"),
)
OTHER = Backend("other", "other ATen ops (views, allocation, dispatch)", r".*",
                "dispatcher and allocator overhead")


#: The probe's intensity tag on GEMM operators (probe.profile.intensity_tag):
#: "aten::addmm [2.0 flop/B]".
INTENSITY_TAG = re.compile(r"^(?P<op>.*) \[(?P<intensity>[0-9.]+) flop/B\]$")


def canonical_op(name: str) -> str:
    """The current name of operator `name` (OP_RENAMES), else `name` itself; an
    intensity tag is kept ("aten::thnn_conv2d_forward [6.4 flop/B]" ->
    "aten::_slow_conv2d_forward [6.4 flop/B]")."""
    match = INTENSITY_TAG.match(name)
    if match:
        return OP_RENAMES.get(match.group("op"), match.group("op")) + name[len(match.group("op")):]
    return OP_RENAMES.get(name, name)


def base_op(op: str) -> str:
    """Operator name `op` without the probe's intensity tag ("aten::addmm [2.0 flop/B]"
    -> "aten::addmm")."""
    match = INTENSITY_TAG.match(op)
    return match.group("op") if match else op


def tagged_intensity(op: str) -> Optional[float]:
    """The arithmetic intensity (flop/B) the probe tagged GEMM operator `op` with, else
    None."""
    match = INTENSITY_TAG.match(op)
    return float(match.group("intensity")) if match else None


def backend_of(op: str) -> Backend:
    """The Backend whose pattern matches canonical operator name `op` (OTHER if none);
    an intensity-tagged GEMM runs where its operator runs."""
    op = base_op(op)
    return next((b for b in BACKENDS if b.matches(op)), OTHER)



#: Diagnosis rule id (eb_torchperf.diagnosis.rules) -> the backend whose share of the profile gap
#: is its evidence (explain.annotate_findings): a BLAS rule is borne out when the
#: BLAS-backed operators hold the extra time, the CPU-capability rule when the
#: vectorised kernels do.
RULE_BACKENDS = {"blas-not-mkl": "blas", "blas-pthreads-with-openmp": "blas",
                 "cpu-capability-low": "vectorised"}
