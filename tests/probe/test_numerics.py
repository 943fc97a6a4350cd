"""probe.numerics: formula inputs, error measures, bounds, and every CPU check run in
this interpreter's torch at small sizes (within its bound: a correct build)."""

import dataclasses
import math

import pytest

from eb_torchperf.analysis import numerics as analysis_numerics
from eb_torchperf.probe import numerics, numerics_checks, numerics_more, registry, suite_gpu

torch = pytest.importorskip("torch")


def test_formula_is_a_prefix_stable_sequence_in_range():
    long, short = numerics.formula(torch, 100000), numerics.formula(torch, 1000)
    assert torch.equal(long[:1000], short)
    assert float(long.min()) >= -1.0 and float(long.max()) < 1.0
    assert abs(float(long.mean())) < 0.01  # no bias: a GEMM's sums cancel like random data
    assert not torch.equal(numerics.formula(torch, 1000, salt=1), short)
    # the values are exact float64 arithmetic: recomputed in Python they agree bit for bit
    i = 12345.0
    x = i * numerics.ALPHA + i * i * numerics.BETA
    assert float(short[0]) == -1.0 and float(long[12345]) == (x - math.floor(x)) * 2.0 - 1.0


def test_maker_rounds_to_the_row_dtype_before_the_exact_computation():
    cache = {}
    row = numerics.Maker(torch, torch.bfloat16, torch.bfloat16, cache=cache)
    exact = numerics.Maker(torch, torch.float64, torch.bfloat16, cache=cache)
    a, b = row.tensor(8, 8, salt=3), exact.tensor(8, 8, salt=3)
    assert a.dtype == torch.bfloat16 and b.dtype == torch.float64
    assert torch.equal(a.double(), b) and len(cache) == 1
    periodic = exact.tensor(3, 7, period=5)
    assert torch.equal(periodic.reshape(-1)[5:10], periodic.reshape(-1)[:5])


def test_errors_use_a_safe_denominator_and_count_flushed_results():
    ref = torch.tensor([1.0, -2.0, 1e-12, 0.0], dtype=torch.float64)
    out = ref + torch.tensor([1e-3, 0.0, 1e-9, 0.0], dtype=torch.float64)
    found = numerics.errors(torch, out.float(), ref, torch.float32)
    rms = math.sqrt(5.0 / 4)  # the floor of the denominator: the output's RMS
    assert found["max_rel"] == pytest.approx(1e-3 / rms, rel=1e-4)  # not 1e-9 / 1e-12
    assert found["norm_rel"] == pytest.approx(math.sqrt(1e-6 + 1e-18) / math.sqrt(5.0), rel=1e-4)
    tiny = torch.full((4,), 1e-39, dtype=torch.float64)
    assert numerics.errors(torch, torch.zeros(4), tiny, torch.float32)["flushed"] == 4
    nan = numerics.errors(torch, torch.tensor([float("nan")]), ref[:1], torch.float32)
    assert nan["norm_rel"] == nan["max_rel"] == numerics.ERROR_CAP


def test_bound_follows_the_unit_roundoff_and_sqrt_depth():
    assert numerics.bound("float32", 512) == pytest.approx(8 * 2 ** -24 * (1 + math.sqrt(512)))
    # bf16 rows accumulate in fp32: the output's rounding dominates
    assert numerics.bound("bfloat16", 512) == pytest.approx(8 * (2 ** -8 + math.sqrt(512) * 2 ** -24))
    assert numerics.bound("tf32", 1) > 100 * numerics.bound("float32", 1)


#: Small params per CPU check (the registered sizes take seconds in float64).
SMALL = {"matmul_fp32": {"n": 64}, "matmul_bf16": {"n": 64, "dtype": "bfloat16"},
         "thread_scaling": {"n": 64, "threads": 1},
         "linear": {"tokens": 8, "in": 64, "out": 32},
         "linear_small_batch": {"tokens": 4, "in": 64, "out": 64},
         "conv3x3": {"batch": 1, "channels": 8, "hw": 8},
         "conv1x1": {"batch": 1, "cin": 16, "cout": 8, "hw": 8, "k": 1},
         "conv_depthwise": {"batch": 1, "cin": 8, "cout": 8, "hw": 8, "k": 3, "depthwise": True},
         "conv_train": {"batch": 1, "cin": 8, "cout": 8, "hw": 8, "k": 3},
         "bert_layer_infer": {"batch": 1, "seq": 8, "hidden": 128},
         "bert_layer_train": {"batch": 1, "seq": 8, "hidden": 128},
         "layernorm": {"rows": 16, "cols": 64}, "softmax": {"rows": 16, "cols": 64},
         "gelu": {"rows": 16, "cols": 64}, "batchnorm": {"batch": 2, "channels": 4, "hw": 4,
                                                         "mode": "train"},
         "embedding_bag": {"rows": 100, "dim": 8, "bags": 16, "per_bag": 4},
         "add_bandwidth": {"numel": 4096}, "denormal": {"numel": 64, "values": "denormal"}}


def test_every_cpu_check_is_registered_and_within_its_bound_here():
    suites = registry.load_suites()
    assert set(numerics_checks.CPU_CHECKS) == set(SMALL)
    for name, params in SMALL.items():
        found = numerics_more.for_row(torch, suites[name], params)
        assert found["norm_rel"] <= found["bound"], (name, found)
        assert found["flushed"] == 0 and found["dtype"] == params.get("dtype", "float32")
    assert numerics_more.for_row(torch, suites["dispatch"], {"numel": 1}) == {}
    assert set(numerics_more.GPU_CHECKS) <= {b.name for b in suites.values()}


def test_flush_to_zero_is_seen_on_the_denormal_row():
    bench = registry.load_suites()["denormal"]
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormals")
    try:
        found = numerics_more.for_row(torch, bench, {"numel": 64, "values": "denormal"})
    finally:
        torch.set_flush_denormal(False)
    assert found["flushed"] == 64 and found["norm_rel"] == 1.0


def test_a_model_row_records_loss_and_gradient_norm():
    bench = registry.load_suites()["bert_train"]
    params = {"kind": "bert", "hidden": 64, "seq": 8, "layers": 1, "batch": 1}
    found = numerics_more.for_row(torch, bench, params)
    again = numerics_more.for_row(torch, bench, params)
    assert found == again and found["dtype"] == "float32"  # no RNG: dropout off, formula
    assert found["loss"] > 0 and found["grad_norm"] > 0
    infer = numerics_more.for_row(torch, registry.load_suites()["bert_infer"], params)
    assert set(infer) == {"dtype", "loss", "math_mode"}


#: Small params per GPU check, run here on the CPU (the same code path but the device).
GPU_SMALL = {"gemm_cuda": {"dtype": "tf32", "m": 2048, "n": 16, "k": 64},
             "linear_cuda_fwd": {"dtype": "bf16", "tokens": 8, "in": 64, "out": 32},
             "linear_cuda_train": {"dtype": "fp32", "tokens": 8, "in": 64, "out": 32},
             "conv_cuda": {"dtype": "fp32", "batch": 64, "channels": 8, "hw": 6},
             "sdpa_cuda": {"dtype": "bf16", "batch": 1, "heads": 2, "seq": 16, "head_dim": 32,
                           "backend": "default"}}


def test_every_gpu_check_runs_on_the_cpu_within_its_bound():
    assert set(numerics_more.GPU_CHECKS) == set(GPU_SMALL)
    for name, params in GPU_SMALL.items():
        check = numerics_more.GPU_CHECKS[name]
        found = numerics.measure(torch, check, params, "cpu")
        assert found["norm_rel"] <= found["bound"], (name, found)
    # TF32 rows are judged at TF32's unit roundoff; a fp32 convolution too (cuDNN's default)
    assert numerics_more.GPU_CHECKS["gemm_cuda"].precision({"dtype": "tf32"}) == "tf32"
    assert numerics_more.GPU_CHECKS["conv_cuda"].precision({"dtype": "fp32"}) == "tf32"
    assert numerics_more.GPU_CHECKS["gemm_cuda"].precision({"dtype": "fp32"}) == "float32"


@pytest.fixture
def cublas_tf32():
    """Set torch.backends.cuda.matmul.allow_tf32 (settable on a CPU torch too) for a
    test, as a module or site profile would; restored after."""
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32

    def set_to(value):
        matmul.allow_tf32 = value
    yield set_to
    matmul.allow_tf32 = before


@pytest.mark.parametrize("site_tf32", [False, True])
def test_fp32_rows_keep_the_process_mode_and_tf32_rows_switch_it_on(cublas_tf32, site_tf32):
    cublas_tf32(site_tf32)
    seen = []
    call = lambda: seen.append(torch.backends.cuda.matmul.allow_tf32)  # noqa: E731
    assert suite_gpu._in_row_mode(torch, "fp32", call) is call  # no wrapper in the timing
    suite_gpu._in_row_mode(torch, "fp32", call)()
    suite_gpu._in_row_mode(torch, "tf32", call)()
    assert seen == [site_tf32, True]
    assert torch.backends.cuda.matmul.allow_tf32 is site_tf32  # the tf32 row put it back
    bench = dataclasses.replace(registry.load_suites()["gemm_cuda"], device="cpu")
    for dtype, tf32 in (("fp32", site_tf32), ("tf32", True)):
        found = numerics_more.for_row(torch, bench, {"dtype": dtype, "m": 8, "n": 8, "k": 64})
        assert "cuda_matmul_allow_tf32=%s" % tf32 in found["math_mode"].split(), dtype
    assert torch.backends.cuda.matmul.allow_tf32 is site_tf32


def _round_to_tf32(x):
    """float32 values rounded to TF32's 10-bit significand (round half away from zero),
    as Tensor Cores read fp32 inputs (https://docs.nvidia.com/cuda/cublas/#cublasmath-t)."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def _tf32_gemm(torch, p, mk):
    """The gemm_cuda check as cuBLAS computes it in TF32: TF32 products, fp32 sums."""
    a, b = mk.tensor(p["m"], p["k"], salt=1), mk.tensor(p["k"], p["n"], salt=2)
    if not mk.exact:
        a, b = _round_to_tf32(a), _round_to_tf32(b)
    return torch.mm(a, b)


def test_a_fp32_row_in_tf32_exceeds_its_fp32_bound_and_a_tf32_row_keeps_tf32s():
    """The H200 case of issue 30 emulated on the CPU at the full suite's K: a site that
    turns TF32 on makes the fp32 row's error exceed the fp32 bound, far above the
    reference's (a finding); NVIDIA_TF32_OVERRIDE=0 makes a tf32 row compute in fp32,
    below the reference's TF32 error (no finding)."""
    check = numerics_more.GPU_CHECKS["gemm_cuda"]
    emulated = dataclasses.replace(check, compute=_tf32_gemm)
    fp32 = {"dtype": "fp32", "m": 16, "n": 16, "k": 8192}
    tf32 = dict(fp32, dtype="tf32")
    exact, in_tf32 = numerics.measure(torch, check, fp32), numerics.measure(torch, emulated, fp32)
    assert exact["bound"] == numerics.bound("float32", 8192) < in_tf32["norm_rel"]
    assert in_tf32["norm_rel"] < numerics.bound("tf32", 8192)
    assert exact["norm_rel"] <= exact["bound"] < numerics.bound("tf32", 8192) / 50
    judged = analysis_numerics.assess(in_tf32, exact)
    assert (judged["state"], judged["mechanism"]) == ("reduced-precision", "precision")
    # a tf32 row is judged at TF32: in TF32 on both sides, or in fp32 on the target
    reference = numerics.measure(torch, emulated, tf32)
    assert reference["bound"] == numerics.bound("tf32", 8192) > reference["norm_rel"]
    assert analysis_numerics.assess(numerics.measure(torch, check, tf32), reference)[
        "state"] == "agree"
