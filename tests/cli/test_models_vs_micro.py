"""benchmarks/models_vs_micro.py on the shipped Debian example (issue 17)."""

import importlib.util
import json
import pathlib

import pytest

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


def _run(capsys, *argv):
    status = _script().main(["x"] + [str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _patched(tmp_path, name, source, change):
    data = json.loads(source.read_text())
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def test_micro_rows_of_another_cpu_are_refused_by_name_with_the_remedy(tmp_path, capsys):
    # the fresh-user pass: the committed AVX512 micro rows, their reference venv path
    # made to match, pooled silently with models measured on an AVX2 host
    def avx2_host(data):
        data["target"]["facts"]["cpu"]["flags"] = [
            f for f in data["target"]["facts"]["cpu"]["flags"] if not f.startswith("avx512")]
    micro = _patched(tmp_path, "micro.json", MICRO, avx2_host)
    status, out, err = _run(capsys, MODELS, micro)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "the CPU differs (AuthenticAMD AMD EPYC, avx2, 2 allowed cores against " \
           "AuthenticAMD AMD EPYC, avx512, 2 allowed cores)" in err
    assert "--suite full --only ROW" in err


def test_a_rebuilt_reference_venv_of_the_same_build_pools(tmp_path, capsys):
    def moved(data):
        torch = data["reference"]["facts"]["torch"]
        torch["file"] = torch["file"].replace("torch-2.13.0-", "torch-2.13.0-moved-")
    micro = _patched(tmp_path, "micro.json", MICRO, moved)
    status, out, _ = _run(capsys, MODELS, micro)
    assert status == 0 and "within 1.5x: 14 of 14 model rows" in out


def test_another_reference_build_is_refused(tmp_path, capsys):
    def rebuilt(data):
        data["reference"]["facts"]["torch"]["fingerprint"] = "0123456789abcdef"
    micro = _patched(tmp_path, "micro.json", MICRO, rebuilt)
    status, _, err = _run(capsys, MODELS, micro)
    assert status == 2 and "the reference torch build differs (0123456789abcdef against " in err


def test_a_file_given_twice_is_refused(capsys):
    status, out, err = _run(capsys, MODELS, MICRO, MICRO)
    assert status == 2 and out == ""
    assert err == "models_vs_micro: error: %s is given twice (pooling a file with itself " \
                  "would count its rows twice)\n" % MICRO


def test_no_prediction_says_which_input_lacks_what(tmp_path, capsys):
    explain = EXAMPLES / "debian-vs-wheel-2.13.0-models.explain.json"
    empty = _patched(tmp_path, "empty.explain.json", explain,
                     lambda d: d.update(profiles=[]))
    status, _, err = _run(capsys, MODELS, MICRO, "--explain", empty)
    assert status == 2 and "%s holds no profiles" % empty in err

    def micro_only(data):
        data["profiles"] = [p for p in data["profiles"] if not p["workload"].endswith(
            ("_infer", "_train")) or p["workload"].startswith("bert_layer")]
    others = _patched(tmp_path, "micro.explain.json", explain, micro_only)
    status, _, err = _run(capsys, MODELS, MICRO, "--explain", others)
    assert status == 2 and "profiles none of the measured model rows (it profiled " \
        "bert_layer_infer, bert_layer_train, resnet_block, dlrm;" in err

    status, _, err = _run(capsys, MICRO, "--explain", explain)
    assert status == 2 and "the results hold no model rows" in err


def test_the_micro_file_first_says_to_give_the_models_audit_first(capsys):
    status, _, err = _run(capsys, MICRO, MODELS)
    assert status == 2 and "give the models audit first, or --explain FILE" in err


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.models_vs_micro.txt")))
def test_every_committed_example_reprints_exactly(example, capsys, monkeypatch):
    command, printed = (EXAMPLES / example).read_text().split("\n", 1)
    argv = command.split("#")[0].split()
    assert argv[:3] == ["$", ".venv/bin/python", "benchmarks/models_vs_micro.py"]
    monkeypatch.chdir(ROOT)
    assert _script().main(["x"] + argv[3:]) == 0
    assert capsys.readouterr().out == printed


def test_a_copy_of_a_pooled_file_is_the_same_audit_and_refused(tmp_path, capsys):
    copy = tmp_path / "micro-copy.json"
    copy.write_text(MICRO.read_text())
    status, out, err = _run(capsys, MODELS, MICRO, copy)
    assert status == 2 and out == ""
    assert err.startswith("models_vs_micro: error: %s holds the same audit as %s (started "
                          % (copy, MICRO)) and err.count("\n") == 1


def test_profiles_made_for_an_audit_of_another_cpu_are_refused(tmp_path, capsys):
    # the profiles of the models audit, made (so their explain document says) for a copy
    # of that audit measured on an AVX2 host: the audit they were made for
    # (results_file) does not pool with the one given
    def avx2_host(data):
        data["target"]["facts"]["cpu"]["flags"] = [
            f for f in data["target"]["facts"]["cpu"]["flags"] if not f.startswith("avx512")]
    other = _patched(tmp_path, "avx2-models.json", MODELS, avx2_host)
    explain = json.loads((EXAMPLES / "debian-vs-wheel-2.13.0-models.explain.json").read_text())
    explain["results_file"] = str(other)
    path = tmp_path / "other.explain.json"
    path.write_text(json.dumps(explain))
    status, _, err = _run(capsys, MODELS, MICRO, "--explain", path)
    assert status == 2 and err.count("\n") == 1
    assert "were made for %s, which does not pool with" % other in err
    assert "the CPU differs" in err
    assert "explain --results %s --no-remedies" % MODELS in err
