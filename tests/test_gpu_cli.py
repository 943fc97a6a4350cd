"""`eb-torchperf gpu` on the H200 audits and on a CPU-only result; `audit --device`."""

import pathlib

from eb_torchperf import audit_cli, cli

DATA = pathlib.Path(__file__).resolve().parent / "data"


def test_gpu_command_prints_findings_and_writes_markdown(tmp_path, capsys):
    out = tmp_path / "gpu.md"
    status = cli.main(["gpu", str(DATA / "h200-quick-launch-blocking.json"),
                       "--markdown", str(out), "--fail-on", "warning"])
    assert status == 1
    text = capsys.readouterr().out
    assert "WARNING gpu-launch-blocking: Kernel launches are synchronous" in text
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
    with pytest.raises(ConfigError, match="--target-env wants VAR=VALUE, not 'CUDA'"):
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
