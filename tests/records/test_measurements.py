"""Records validate on creation; the JSON form round-trips and rejects other schemas."""

import json

import pytest

from eb_torchperf.errors import SchemaError
from eb_torchperf.records.findings import Finding
from eb_torchperf.records.measurements import (SCHEMA_VERSION, AuditResult, BenchResult, ProbeResult,
                                       load_results)

from testdata import read_config


def bench(**changes):
    fields = dict(bench="matmul_fp32", params={"n": 512}, side="target", pair=0,
                  number_per_run=3, blocks_s=((0.001, 0.002), (0.0015,)), work=2.0, work_unit="flop")
    fields.update(changes)
    return BenchResult(**fields)


@pytest.mark.parametrize("changes,message", [
    ({"side": "new"}, "side must be one of"),
    ({"work_unit": "flops"}, "unknown work unit"),
    ({"number_per_run": 0}, "number_per_run"),
    ({"blocks_s": ((0.001,), ())}, "at least one sample"),
    ({"blocks_s": ((0.0,),)}, "finite and > 0"),
    ({"blocks_s": ((float("nan"),),)}, "finite and > 0"),
])
def test_bench_result_validates(changes, message):
    with pytest.raises(ValueError, match=message):
        bench(**changes)


def test_key_and_times():
    b = bench(params={"threads": 1, "n": 512})
    assert b.key == ("matmul_fp32", '{"n":512,"threads":1}')
    assert b.times_s == (0.001, 0.002, 0.0015)


def probe():
    facts = {"torch": {"version": "1.13.0a0",
                       "config_show": read_config("debian-12-python3-torch-1.13.1-source.txt"),
                       "parallel_info": read_config(
                           "debian-12-python3-torch-1.13.1-source.parallel_info.txt")},
             "cpu": {"allowed_cores": 2}}
    return ProbeResult.from_facts("target", "/usr/bin/python3", facts)


def test_probe_result_parses_texts():
    p = probe()
    assert p.build.blas_info == "generic" and p.parallel["intra_op_threads"] == 1
    assert p.fact("cpu", "allowed_cores") == 2 and p.fact("gpu", "available") is None


def test_audit_round_trip(tmp_path):
    finding = Finding("blas-not-mkl", "error", "BLAS is not MKL", {"BLAS_INFO": "generic"},
                      "add imkl", "https://github.com/easybuilders/easybuild/issues/931")
    audit = AuditResult(suite="quick", options={"pairs": 2}, target=probe(), reference=None,
                        results=(bench(), bench(side="reference",
                                                kernels=("aten::mkldnn_convolution",))),
                        complete=False,
                        errors=({"side": "target", "message": "boom"},), findings=(finding,))
    path = tmp_path / "sub" / "r.json"
    audit.save(path)
    loaded = load_results(path)
    assert loaded.results == audit.results and loaded.findings == (finding,)
    assert loaded.target.build == audit.target.build and loaded.complete is False
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert loaded.results[1].kernels == ("aten::mkldnn_convolution",)
    assert loaded.results[0].kernels == ()
    # a document written before kernels were recorded loads with none
    data = json.loads(path.read_text())
    for result in data["results"]:
        del result["kernels"]
    path.write_text(json.dumps(data))
    assert [r.kernels for r in load_results(path).results] == [(), ()]
    data["results"][0]["kernels"] = "aten::mm"          # not a list of names
    path.write_text(json.dumps(data))
    with pytest.raises(SchemaError, match="kernels"):
        load_results(path)


def test_load_rejects_other_documents(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(SchemaError, match="no schema_version"):
        load_results(path)
    path.write_text('{"schema_version": 99}')
    with pytest.raises(SchemaError, match="schema version 99 is not supported"):
        load_results(path)
    path.write_text('{"schema_version": 1, "kind": "eb_torchperf-explain"}')
    with pytest.raises(SchemaError, match="this is an explain document"):
        load_results(path)
    path.write_text("not json")
    with pytest.raises(SchemaError, match="is not JSON"):
        load_results(path)
    path.write_text(" \n")  # was: "is not JSON: Expecting value: line 1 column 1 (char 0)"
    with pytest.raises(SchemaError, match=r"\.json is empty: no results were written to it$"):
        load_results(path)
    with pytest.raises(SchemaError, match="cannot read"):
        load_results(tmp_path / "missing.json")


def test_load_malformed_results(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "suite": "quick",
                                "results": [{"bench": "x"}]}))
    with pytest.raises(SchemaError, match=r"x.json: results\[0\]: missing field 'params'$"):
        load_results(path)
