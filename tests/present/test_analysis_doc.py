"""Results schema 2: the analysis section; quick-suite coverage of rule families."""

import json

from eb_torchperf.diagnosis.diagnose import load_rules
from testdata import record, with_findings
from eb_torchperf.records.measurements import SCHEMA_VERSION, AuditResult, load_results
from eb_torchperf.present.analysis_doc import analysis as analysis_section
from eb_torchperf.probe import registry
from eb_torchperf.diagnosis.rules.scope import CUDA_STARTUP

from auditcases import GOLDEN, golden_document


def test_saved_document_carries_rows_differences_findings_verdict(tmp_path):
    assert golden_document()["schema_version"] == 1  # version 1 still loads
    result = with_findings(load_results(GOLDEN))
    path = tmp_path / "r.json"
    result.save(path, analysis_section(result, record(result)))
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION == 3
    analysis = data["analysis"]
    gemm = next(r for r in analysis["rows"] if r["bench"] == "matmul_fp32")
    assert gemm["family"] == "cpu/gemm" and gemm["significant"] is True
    assert gemm["ci_low"] <= gemm["relative_ops"] <= gemm["ci_high"] < 0.5
    assert analysis["verdict"]["level"] == "error"
    assert "BLAS" in [d["key"] for d in analysis["differences"]]
    assert data["findings"][0]["affects"]
    again = AuditResult.from_json(data)
    assert again.findings == result.findings


#: Families left out of the quick suite on purpose: an all-reduce needs >= 2 GPUs and
#: starts one peer process per GPU in every worker pair (~10 s each), beyond the quick
#: budget; nccl-transport-off grades by the environment alone there.
#: The whole models (probe/suite_models, family "model") take minutes: --suite models
#: and full only.
NOT_QUICK = {("cuda", "communication"), ("cpu", "model"), ("cuda", "model")}


def test_every_family_a_rule_can_explain_has_a_quick_row():
    quick = {(b.device, b.family) for b in registry.load_suites().values() if b.params_for("quick")}
    needed = frozenset().union(*(rule.affects for rule in load_rules())) - CUDA_STARTUP
    assert needed - quick == NOT_QUICK
    gemm = registry.REGISTRY["gemm_cuda"].params_for("quick")
    assert {p["dtype"] for p in gemm} == {"bf16", "tf32"}
