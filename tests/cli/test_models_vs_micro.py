"""benchmarks/models_vs_micro.py on the shipped Debian example (issue 17)."""

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "reports" / "examples"
MODELS = EXAMPLES / "debian-vs-wheel-2.13.0-models.json"
MICRO = EXAMPLES / "debian-vs-wheel-2.13.0-full-micro.json"


def _script():
    spec = importlib.util.spec_from_file_location("models_vs_micro",
                                                  ROOT / "benchmarks" / "models_vs_micro.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_example_prints_what_is_committed(capsys):
    assert _script().main(["x", str(MODELS), str(MICRO)]) == 0
    out = capsys.readouterr().out
    committed = (EXAMPLES / "debian-vs-wheel-2.13.0-models.models_vs_micro.txt").read_text()
    assert out == committed.split("\n", 1)[1]
    assert "note:" not in out                   # every conv row recorded its kernels


def test_results_without_kernels_say_their_prediction_is_path_blind(tmp_path, capsys):
    data = json.loads(MICRO.read_text())
    for result in data["results"]:
        result.pop("kernels", None)
    micro = tmp_path / "micro.json"
    micro.write_text(json.dumps(data))
    assert _script().main(["x", str(MODELS), str(micro)]) == 0
    out = capsys.readouterr().out
    # conv3x3 2, conv1x1 4, conv_depthwise 2, conv_train 4
    assert "note: 12 convolution row(s) recorded no kernels" in out.splitlines()[-1]


def test_a_missing_profile_says_how_to_make_one(tmp_path, capsys):
    lone = tmp_path / "micro.json"
    lone.write_text(MICRO.read_text())
    assert _script().main(["x", str(lone)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "eb-torchperf audit --explain" in err


def test_a_profile_off_the_audits_figure_is_marked(tmp_path, capsys):
    # the reference profiled at half its audit speed: the profile says 2x the model's
    # relative OPS, and the prediction made from it is marked
    explain = json.loads((EXAMPLES / "debian-vs-wheel-2.13.0-models.explain.json").read_text())
    (profile,) = [p for p in explain["profiles"] if p["workload"] == "resnet50_infer"]
    for op in profile["reference"]["ops"]:
        op["self_s"] *= 2
    path = tmp_path / "slowed.explain.json"
    path.write_text(json.dumps(explain))
    assert _script().main(["x", str(MODELS), str(MICRO), "--explain", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (row,) = [line for line in lines if line.startswith("resnet50_infer ")]
    measured, profiled = float(row.split()[1]), float(row.split()[8])
    assert row.split()[9] == "%!" and 1.5 < profiled / measured < 2.5
    (note,) = [line for line in lines if line.startswith("! the profile")]
    assert "resnet50_infer" in note and "resnet50_train" not in note
    assert any(line.startswith("within 1.5x: ") and line.endswith(" of 14 model rows")
               for line in lines)
