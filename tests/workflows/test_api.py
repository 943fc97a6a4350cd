"""The public API of `eb_torchperf` (workflows.api), and the example of it in docs/api.md."""

import pathlib
import re
import subprocess
import sys

import pytest

import eb_torchperf
from eb_torchperf.errors import ConfigError

from auditcases import GOLDEN

API_DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "api.md"


def readme_example() -> str:
    """The first Python block of docs/api.md."""
    section = API_DOC.read_text()
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs(tmp_path, wheel_python):
    """The snippet as printed, with a reference of none (no pip) and this interpreter."""
    code = readme_example()
    original = 'audit("/usr/bin/python3", reference="wheel==2.13.0",'
    assert original in code
    code = code.replace(original, "audit(%r, reference=\"none\"," % wheel_python)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ findings; report: reports/torchperf-\d{8}-\d{6}\.html", last), last
    assert (tmp_path / last.split("report: ")[1]).read_text().startswith("<!DOCTYPE html>")
    stored = eb_torchperf.load_results(tmp_path / "reports" / "run.json")
    assert stored.complete and {r.bench for r in stored.results} == {"dispatch"}
    assert stored.options["pairs"] == 1 and stored.reference is None


def test_diagnose_and_write_reports_of_a_stored_run(tmp_path):
    result = eb_torchperf.load_results(GOLDEN)
    findings = eb_torchperf.diagnose(result)
    assert findings[0].severity == "error"
    assert "blas-not-mkl" in [f.rule_id for f in findings]
    paths = eb_torchperf.write_reports(result, tmp_path, formats=("md", "json"), stem="g")
    assert paths == {"md": tmp_path / "g.md", "json": tmp_path / "g.json"}
    assert "blas-not-mkl" in (tmp_path / "g.md").read_text()


def test_audit_refuses_bad_options_before_running():
    with pytest.raises(ConfigError, match="--pairs must be at least 1, not 0"):
        eb_torchperf.audit("/bin/sh", reference="none", pairs=0)
    with pytest.raises(TypeError, match="unknown option"):
        eb_torchperf.audit("/bin/sh", reference="none", pair=1)
    with pytest.raises(ConfigError, match="unknown report format pdf"):
        eb_torchperf.write_reports(eb_torchperf.load_results(GOLDEN), "/nonexistent",
                                   formats=("pdf",))


def test_explain_needs_a_reference():
    result = eb_torchperf.load_results(GOLDEN)
    import dataclasses
    with pytest.raises(ConfigError, match="explain needs a baseline audit with a target and "
                                          "a reference"):
        eb_torchperf.explain(dataclasses.replace(result, reference=None), workloads=(),
                             try_remedies=False)


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        eb_torchperf.nope
    assert {"audit", "load_results", "diagnose", "write_reports", "explain"} <= set(
        eb_torchperf.__all__)
