"""`eb-torchperf gpu` on the H200 audits and on a CPU-only result; `audit --device`."""

import json
import pathlib

import pytest

from eb_torchperf.cli import audit as audit_cli
from eb_torchperf.cli import dispatch as cli

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"


def test_gpu_command_prints_findings_and_writes_markdown(tmp_path, capsys):
    out = tmp_path / "gpu.md"
    status = cli.main(["gpu", str(DATA / "h200-quick-launch-blocking.json"),
                       "--markdown", str(out), "--fail-on", "warning"])
    assert status == 1
    text = capsys.readouterr().out
    assert "WARNING gpu-launch-blocking  Kernel launches are synchronous" in text
    assert "remedy: " in text and "advice:" not in text
    markdown = out.read_text()
    assert "| launch_cuda sync=False | µs/op | 17.04 | 10.26 |" in markdown
    assert "- **gpu-launch-blocking** (warning)" in markdown


def test_gpu_command_on_the_normal_audit(capsys):
    assert cli.main(["gpu", str(DATA / "h200-quick-normal.json")]) == 0
    assert "GPU findings: none" in capsys.readouterr().out


def test_parse_env():
    assert audit_cli.parse_env(["CUDA_LAUNCH_BLOCKING=1", "A=b=c", "GONE="]) == {
        "CUDA_LAUNCH_BLOCKING": "1", "A": "b=c", "GONE": None}


def test_parse_env_rejects_a_bare_name(capsys):
    import pytest
    from eb_torchperf.errors import ConfigError
    with pytest.raises(ConfigError, match="--target-env wants VAR=VALUE .*, not 'CUDA'$"):
        audit_cli.parse_env(["CUDA"])


def test_skip_lines_group_one_reason_into_one_line():
    reason = "no GPU: this torch is built without CUDA"
    skipped = [{"bench": b, "params": p, "side": s, "reason": reason}
               for b, p in (("gemm_cuda", {"dtype": "bf16"}), ("gemm_cuda", {"dtype": "fp32"}),
                            ("copy_d2d", {}))
               for s in ("target", "reference")]
    skipped.append({"bench": "matmul_bf16", "params": {}, "side": "target",
                    "reason": "CPU has no native bf16"})
    assert audit_cli.skip_lines(skipped) == [
        "skipped 2 benchmarks on target, reference: %s (gemm_cuda, copy_d2d)" % reason,
        "skipped 1 benchmark on target: CPU has no native bf16 (matmul_bf16)"]


def test_device_option_defaults_to_all():
    args = cli.build_parser().parse_args(["audit", "--target-env", "X=1"])
    assert args.device == "all" and audit_cli.DEVICES[args.device] == ("cpu", "cuda")
    assert args.target_env == ["X=1"]


@pytest.mark.parametrize("link", [None, "symlink", "hardlink"])
def test_markdown_over_the_results_file_is_refused(tmp_path, capsys, link):
    results = tmp_path / "run.json"
    results.write_bytes((DATA / "h200-quick-normal.json").read_bytes())
    before = results.read_bytes()
    markdown = results
    if link:
        markdown = tmp_path / "other.json"
        (markdown.symlink_to if link == "symlink" else markdown.hardlink_to)(results)
    assert cli.main(["gpu", str(results), "--markdown", str(markdown)]) == 2
    assert capsys.readouterr().err == ("eb-torchperf: error: --markdown %s would overwrite %s; "
                                       "choose another name\n" % (markdown, results))
    assert results.read_bytes() == before


def _edited(tmp_path, edit):
    document = json.loads((DATA / "h200-quick-normal.json").read_text())
    edit(document)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["target"]["facts"].__setitem__("gpu", "x"),
     "target.facts.gpu: expected an object, got 'x'"),
    (lambda d: d["target"]["facts"]["gpu"]["devices"][0].__setitem__("capability", "x.y"),
     "malformed GPU facts or results (ValueError: "),
    (lambda d: d["target"].__setitem__("facts", "x"),
     "target.facts: expected an object, got 'x'"),
    (lambda d: d.update(errors=["x"], complete=False),
     "errors[0]: expected an object, got 'x'"),
])
def test_hand_edited_gpu_facts_give_one_line(tmp_path, capsys, edit, message):
    path = _edited(tmp_path, edit)
    assert cli.main(["gpu", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("eb-torchperf: error: %s: %s" % (path, message)) and err.count("\n") == 1


def test_gpu_facts_missing_say_so(tmp_path, capsys):
    path = _edited(tmp_path, lambda d: d["target"]["facts"].__setitem__("gpu", None))
    assert cli.main(["gpu", str(path)]) == 0
    assert capsys.readouterr().out == "GPU: none in this audit (the probe recorded no GPU facts)\n"


def test_allreduce_only_audit_shows_only_its_tables(capsys):
    assert cli.main(["gpu", str(DATA / "h200x2-allreduce.json")]) == 0
    out = capsys.readouterr().out
    assert "allreduce_nccl mib=256 gpus=2" in out and "296.35" in out
    assert "GEMM (target)" not in out and "CPU vs GPU time per call" not in out
