"""The models suite (probe/suite_models): each model built and stepped on tiny inputs,
for real, in Debian's torch 1.13 (+ python3-torchvision 0.14) and in the 2.13 wheel's
venv (+ PyPI torchvision 0.28, whose compiled ops do not load beside a +cpu torch)."""

import json
import os
import subprocess

import pytest

from eb_torchperf.probe import registry, suite_models
from eb_torchperf.measure.runner import ProbeBundle, worker_env

#: Tiny parameters per model: same builders, seconds instead of minutes.
TINY = {
    "alexnet": {"kind": "torchvision", "model": "alexnet", "batch": 2, "hw": 64},
    "mobilenet_v3_large": {"kind": "torchvision", "model": "mobilenet_v3_large", "batch": 2,
                           "hw": 64},
    "resnet50": {"kind": "torchvision", "model": "resnet50", "batch": 2, "hw": 64},
    "regnet_y_400mf": {"kind": "torchvision", "model": "regnet_y_400mf", "batch": 2, "hw": 64},
    "bert": {"kind": "bert", "hidden": 64, "seq": 8, "layers": 1, "batch": 2},
    "dlrm": {"kind": "dlrm", "tables": 2, "rows": 100, "dim": 8, "per_bag": 3, "dense": 13,
             "batch": 4},
    "gpt": {"kind": "gpt", "hidden": 64, "seq": 8, "layers": 1, "batch": 2},
}

#: Run in the target interpreter with only the probe bundle on its path: per model, the
#: availability reason, the inference output shape, and whether one training step
#: changed the parameters (and left the loss finite).
SCRIPT = r"""
import json, sys, torch
from ebtp_probe import registry, suite_models
registry.load_suites()
tiny = json.loads(sys.argv[1])
out = {}
for name, p in tiny.items():
    reason = registry.REGISTRY[name + "_infer"].available(torch, {})
    if reason:
        out[name] = {"reason": reason}
        continue
    model, inputs, loss = suite_models.build(torch, p)
    model.eval()
    with torch.no_grad():
        shape = list(model(*inputs).shape)
    before = [t.detach().clone() for t in model.parameters()]
    suite_models.make_step(torch, p, "infer")()
    train = suite_models.make_step(torch, p, "train")
    train()
    # make_step builds its own seeded model: the same weights as `before`
    model2, inputs2, loss2 = suite_models.build(torch, p)
    changed = any(not torch.equal(a, b) for a, b in zip(before, model2.parameters()))
    same_init = all(torch.equal(a, b) for a, b in zip(before, model2.parameters()))
    out[name] = {"shape": shape, "same_init": same_init,
                 "loss": float(loss2(model2(*inputs2)))}
    # a training step changes the weights
    model2.train()
    opt = torch.optim.SGD(model2.parameters(), lr=0.01)
    opt.zero_grad()
    loss2(model2(*inputs2)).backward()
    opt.step()
    out[name]["trained"] = any(not torch.equal(a, b) for a, b in zip(before, model2.parameters()))
print(json.dumps(out))
"""


def _run_in(python, bundle_dir):
    proc = subprocess.run([python, "-s", "-c", SCRIPT, json.dumps(TINY)], capture_output=True,
                          text=True, timeout=600, env=worker_env(os.environ, bundle_dir))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bundle():
    with ProbeBundle() as b:
        yield b.path


EXPECTED_SHAPES = {"alexnet": [2, 1000], "mobilenet_v3_large": [2, 1000],
                   "resnet50": [2, 1000], "regnet_y_400mf": [2, 1000], "bert": [2, 8, 64],
                   "dlrm": [4, 1], "gpt": [2, 8, 64]}


@pytest.mark.parametrize("which", ["debian_python", "wheel_python"])
def test_every_model_builds_infers_and_trains(which, bundle, request):
    python = request.getfixturevalue(which)
    out = _run_in(python, bundle)
    for name, expected in EXPECTED_SHAPES.items():
        if "reason" in out[name]:
            # only the torchvision models may be missing, and then with the reason
            assert TINY[name]["kind"] == "torchvision", out[name]
            assert "torchvision" in out[name]["reason"]
            pytest.skip("%s: %s" % (which, out[name]["reason"]))
        assert out[name]["shape"] == expected, name
        assert out[name]["same_init"] and out[name]["trained"], name
        assert out[name]["loss"] == out[name]["loss"] and out[name]["loss"] > 0, name


def test_torchvision_models_load_beside_a_torch_whose_ops_they_lack(wheel_python, bundle):
    """The venv's PyPI torchvision 0.28 fails `import torchvision` ("operator
    torchvision::nms does not exist") beside the +cpu torch 2.13; its model definitions
    still load, through the bare-package fallback."""
    code = ("import torch, sys\n"
            "try:\n    import torchvision\n    print('plain')\n"
            "except Exception as exc:\n    print('broken', type(exc).__name__)\n"
            "from ebtp_probe import suite_models\n"
            "m = suite_models.torchvision_models()\n"
            "print(m.__name__, sorted(set(suite_models.TORCHVISION_GMACS) - set(dir(m))))\n")
    proc = subprocess.run([wheel_python, "-s", "-c", code], capture_output=True, text=True,
                          timeout=300, env=worker_env(os.environ, bundle))
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("\n")
    assert lines[1] == "torchvision.models []"
    if lines[0] == "plain":
        pytest.skip("this venv's torchvision imports as is: the fallback is not exercised")
    assert lines[0] == "broken RuntimeError"


def test_missing_torchvision_is_an_availability_reason(monkeypatch):
    def no_torchvision(name):
        raise ModuleNotFoundError("No module named 'torchvision'", name="torchvision")

    monkeypatch.setattr(suite_models, "_TV_CACHE", {})
    monkeypatch.setattr(suite_models.importlib, "import_module", no_torchvision)
    reason = registry.load_suites()["resnet50_train"].available(None, {})
    assert reason == ("torchvision is not installed beside this torch (Debian: "
                      "python3-torchvision; EasyBuild: load the torchvision module)")
    # the BERT-like model needs torch only
    assert registry.REGISTRY["bert_train"].available(None, {}) is None
    # on CUDA the GPU reason comes first
    assert registry.REGISTRY["resnet50_cuda_infer"].available(None, {"gpu": {
        "available": False, "reason": "no driver"}}) == "no GPU: no driver"


def test_models_suite_plan_and_time_bound():
    planned = registry.plan("models", ("cpu",))
    names = [name for name, _ in planned]
    assert names == [suite_models.bench_name(m, mode) for m in suite_models.MODEL_TABLE
                     for mode in ("infer", "train")]
    assert len(names) == 14
    # part of full, not of quick
    full = {name for name, _ in registry.plan("full", ("cpu",))}
    quick = {name for name, _ in registry.plan("quick", ("cpu",))}
    assert set(names) <= full and not set(names) & quick
    # the layer rows that explain the models run with them (full), not in quick: quick's
    # time budget holds 16 CPU rows (measure.interleave SUITE_OPTIONS)
    layers = {"conv1x1", "conv_depthwise", "conv_train", "batchnorm"}
    assert layers <= full and not layers & quick
    bench = registry.REGISTRY["resnet50_train"]
    assert (bench.min_rounds, bench.budget_s, bench.family) == (1, 2.5, "model")
    cuda = [name for name, _ in registry.plan("models", ("cuda",))]
    assert cuda == [n.replace("_infer", "_cuda_infer").replace("_train", "_cuda_train")
                    for n in names]


@pytest.mark.parametrize("cores", [2, 16, 192])
def test_alexnet_resnet50_and_bert_run_torchbench_batches_on_every_host(cores):
    batches = {name: params["batch"] for name, params
               in registry.plan("models", ("cpu",), cores=cores)}
    assert (batches["alexnet_train"], batches["resnet50_train"], batches["bert_infer"]) \
        == (16, 4, 4)
    # the others grow with the cores from their 2-core size, up to their cap
    assert batches["mobilenet_v3_large_infer"] == {2: 2, 16: 16, 192: 16}[cores]


def test_work_is_two_flop_per_multiply_add():
    resnet = suite_models.MODEL_TABLE["resnet50"][0]
    assert registry.REGISTRY["resnet50_infer"].work(resnet) == (2 * 4.09e9 * resnet["batch"],
                                                                 "flop")
    assert registry.REGISTRY["resnet50_train"].work(resnet)[0] == pytest.approx(
        3 * 2 * 4.09e9 * resnet["batch"])
    bert = {"kind": "bert", "hidden": 768, "seq": 128, "layers": 1, "batch": 1}
    # 12 h^2 per token for the dense layers plus 2 * seq * h for attention, x 2 FLOP
    assert suite_models.forward_flops(bert) == 2.0 * 128 * (12 * 768 ** 2) + 4.0 * 128 * 128 * 768
