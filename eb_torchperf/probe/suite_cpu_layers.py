"""CPU micro rows for the layers the vision models spend their time in.

(The last row, linear_small_batch, is alexnet's classifier at the CPU batch of the
models suite: the low-intensity end of the GEMM curve, see its comment.)

Why (issue 17): Debian's torch 1.13 ran resnet50 at 7-8 % of the 2.13.0 wheel while
the suite's only convolution row (3x3, 64 channels) said 44 %: resnet50's bottleneck
blocks are mostly 1x1 convolutions, each followed by batch norm, mobilenet_v3's are
depthwise convolutions, and a training step adds the convolution backward.  So:
1x1 convolution (resnet50's 256 -> 64 at 56x56 and 1024 -> 256 at 14x14, and two
mobilenet_v3 shapes), depthwise convolution (mobilenet_v3's, at batch 2), BatchNorm2d
in eval and in train mode (batch statistics), and one 3x3 convolution forward +
backward.  The convolution rows record the kernel each side ran (records_kernels).

Sizes keep one call of Debian's reference-BLAS torch 1.13 (~1-5 GFLOP/s on the 2-core
dev VM) under ~0.5 s, like suite_cpu.
"""

from . import suite_cpu
from .registry import Benchmark, inference, register, scaled

FULL = "full"  # not in quick: its time budget is 16 rows (measure.interleave)


def _conv(torch, p):
    torch.manual_seed(0)
    groups = p["cin"] if p.get("depthwise") else 1
    conv = torch.nn.Conv2d(p["cin"], p["cout"], p["k"], padding=p["k"] // 2, groups=groups,
                           bias=False)
    x = torch.randn(p["batch"], p["cin"], p["hw"], p["hw"])
    return conv, x


def _setup_conv_forward(torch, p):
    conv, x = _conv(torch, p)
    return inference(torch, conv, x)


def _setup_conv_train(torch, p):
    conv, x = _conv(torch, p)
    x.requires_grad_(True)

    def call():
        conv.zero_grad(set_to_none=True)
        x.grad = None
        conv(x).sum().backward()
    return call


def _conv_flops(p):
    per_output = p["k"] ** 2 * (1 if p.get("depthwise") else p["cin"])
    return 2.0 * p["batch"] * p["cout"] * p["hw"] ** 2 * per_output


def _conv_params(batch, cin, cout, hw, k=1, **extra):
    return dict({"batch": batch, "cin": cin, "cout": cout, "hw": hw, "k": k}, **extra)


#: 1x1 convolutions: resnet50's bottleneck (256 -> 64 at 56x56, 1024 -> 256 at 14x14)
#: and the two mobilenet_v3 / regnet shapes on which the wheel's oneDNN is slower than
#: its own sgemm of the same matrices, because it reorders plain NCHW tensors to its
#: blocked layout and back (ONEDNN_VERBOSE on the 2-core VM, wheel 2.13.0, batch 2):
#: few channels at high resolution (16 -> 64 at 112x112: 6.4 ms against 1.0 ms for
#: the sgemm, 2.6 ms of it the output's reorder) and the squeeze-and-excitation convs
#: on a 1x1 input (960 -> 240: 0.34 ms against 0.06 ms).  Debian's torch 1.13 runs
#: those on im2col + reference BLAS at 74 % and ~35 % of the wheel, against 4-6 % for
#: the bottleneck shapes, and they hold half the wheel's convolution time in
#: mobilenet_v3_large (issue 17).  Every row records its kernels (which path it took).
register(Benchmark(
    name="conv1x1", device="cpu", family="conv",
    params={FULL: (_conv_params(4, 256, 64, 56), _conv_params(16, 1024, 256, 14),
                   _conv_params(2, 16, 64, 112), _conv_params(2, 960, 240, 1))},
    scale=scaled("batch", cap=8.0),
    setup=_setup_conv_forward, work=lambda p: (_conv_flops(p), "flop"),
    stresses=("onednn", "intra_op_threads"), records_kernels=True,
    description="1x1 Conv2d forward (ResNet-50 bottleneck, MobileNetV3 expansion and "
                "squeeze-excitation): oneDNN / thnn (im2col-free GEMM)"))

#: Depthwise convolutions at the models suite's CPU batch (2): mobilenet_v3's 3x3 on 72
#: channels at 56x56 and its 5x5 on 120 at 28x28.  At batch 8 (240 channels, 28x28)
#: the wheel's two threads ran the row at 2.3x Debian's one (43 %), while the model's
#: depthwise convolutions at batch 2 ran at 75-200 % (issue 17, 2-core VM): a row of
#: another size measured another regime.
register(Benchmark(
    name="conv_depthwise", device="cpu", family="conv",
    params={FULL: (_conv_params(2, 72, 72, 56, k=3, depthwise=True),
                   _conv_params(2, 120, 120, 28, k=5, depthwise=True))},
    scale=scaled("batch", cap=8.0),
    setup=_setup_conv_forward, work=lambda p: (_conv_flops(p), "flop"),
    stresses=("onednn", "intra_op_threads"), records_kernels=True,
    description="MobileNetV3 depthwise 3x3 and 5x5 Conv2d forward (groups = channels)"))

#: One training step of a convolution (forward + input and weight gradients) at the
#: models suite's CPU batch: a 3x3, mobilenet_v3's 1x1 expansions 112 -> 672 at 14x14
#: (32 flop/B per image) and 16 -> 64 at 112x112 (6.4 flop/B), and its depthwise 3x3
#: on 72 channels at 56x56.  With oneDNN held to SSE4.1 the 3x3 row ran at 27 % while
#: mobilenet_v3's training step, whose backward is mostly 1x1 and depthwise, ran at
#: 85 % (issue 17, 2-core VM); the two 1x1 rows are the backward im2col curve's points
#: where a one-thread torch 1.13 takes them to im2col + BLAS.
register(Benchmark(
    name="conv_train", device="cpu", family="conv",
    params={FULL: (_conv_params(2, 64, 64, 56, k=3), _conv_params(2, 112, 672, 14),
                   _conv_params(2, 16, 64, 112),
                   _conv_params(2, 72, 72, 56, k=3, depthwise=True))},
    scale=scaled("batch", cap=8.0),
    setup=_setup_conv_train, work=lambda p: (3 * _conv_flops(p), "flop"),
    stresses=("onednn", "intra_op_threads"), records_kernels=True,
    description="Conv2d forward + backward (input and weight gradients): 3x3, two 1x1, "
                "depthwise 3x3"))


def _setup_batchnorm(torch, p):
    torch.manual_seed(0)
    norm = torch.nn.BatchNorm2d(p["channels"])
    norm.train(p["mode"] == "train")
    x = torch.randn(p["batch"], p["channels"], p["hw"], p["hw"])
    return inference(torch, norm, x)


_BN = tuple({"batch": 8, "channels": 64, "hw": 56, "mode": m} for m in ("eval", "train"))

register(Benchmark(
    name="batchnorm", device="cpu", family="vectorised",
    params={FULL: _BN},
    scale=scaled("batch", cap=8.0),
    setup=_setup_batchnorm,
    work=lambda p: (2.0 * 4 * p["batch"] * p["channels"] * p["hw"] ** 2, "byte"),
    stresses=("aten_vectorised", "memory_bound", "intra_op_threads"),
    description="BatchNorm2d forward, eval (running stats) and train (batch stats) "
                "(fp32; bytes read + written): ATen vectorised kernels"))


#: alexnet's classifier at the models suite's CPU batch (4 x 4096 -> 4096, a 64 MB fp32
#: weight, more than any L3 of the dev VM's class): each call streams the weight once,
#: so its speed is the BLAS library's small-M path and memory bandwidth, not the GEMM
#: kernel's arithmetic that the 256-token `linear` row times (2 flop/B against 85).
#: Debian's alexnet ran at 24-33 % of the wheel while `linear` read 1.5 % (issue 17); it
#: is the low-intensity point of analysis.model_prediction's GEMM curve (15 % there).
register(Benchmark(
    name="linear_small_batch", device="cpu", family="gemm",
    params={FULL: ({"tokens": 4, "in": 4096, "out": 4096},)},
    setup=suite_cpu._setup_linear,  # the linear row's setup, at 4 tokens
    work=lambda p: (2.0 * p["tokens"] * p["in"] * p["out"], "flop"),
    stresses=("blas", "memory_bound", "intra_op_threads"),
    description="nn.Linear forward at batch 4 (alexnet's 4096 -> 4096 classifier): "
                "BLAS small-M path, bound by streaming the weight"))
