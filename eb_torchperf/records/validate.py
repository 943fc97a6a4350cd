"""Types per field of the stored documents (results, explain, fleet manifest), checked
on load, before any record is built from them.

A stored file may have been edited by hand, cut short by an old version, or made by
someone else; without a check, one wrongly typed field ("options": null) surfaces as
a traceback deep in a rule or a template.  `check(document, spec)` walks the document
against a spec and raises SchemaError naming the path of the first bad field:

    options: expected an object, got null
    results[3].blocks_s[0][2]: expected a number, got "fast"

Specs are plain data built from the helpers below.  Fields a spec does not name are
accepted as they are (newer files may carry more); fields it names as optional may be
missing.  The field lists follow what the readers use: measurements (AuditResult,
BenchResult, ProbeResult), findings.Finding, the facts documents of probe/facts.py and
probe/gpu_facts.py as read by buildconfig, configdiff, gpusummary and rules/.
"""

from typing import Sequence

from eb_torchperf.records.specs import (  # noqa: F401  (the types, for other checkers)
    Any, Bool, Enum, FileName, Int, ListOf, MapOf, Num, Obj, Opt, Scalar, Seconds, Spec, Str,
    check)


# --- the facts of one interpreter (probe/facts.py, probe/gpu_facts.py) -------------

_OPT_STR, _OPT_INT, _OPT_NUM, _OPT_BOOL = Opt(Str()), Opt(Int()), Opt(Num()), Opt(Bool())

FACTS = Obj(optional={
    "torch": Opt(Obj(optional={
        "version": _OPT_STR, "file": _OPT_STR, "git_version": _OPT_STR, "debug": _OPT_BOOL,
        "cuda": _OPT_STR, "config_show": _OPT_STR, "parallel_info": _OPT_STR,
        "cpu_capability": _OPT_STR, "mkl_available": _OPT_BOOL, "mkldnn_available": _OPT_BOOL,
        "mkldnn_enabled": _OPT_BOOL, "openmp_available": _OPT_BOOL,
        "intra_op_threads": _OPT_INT, "interop_threads": _OPT_INT,
        "flush_denormal_supported": _OPT_BOOL})),
    "python": Opt(Obj(optional={
        "executable": _OPT_STR, "implementation": _OPT_STR, "version": _OPT_STR,
        "prefix": _OPT_STR, "path": Opt(ListOf(Str()))})),
    "threadpools": Opt(Obj(optional={
        "available": _OPT_BOOL, "version": _OPT_STR,
        "pools": Opt(ListOf(Obj(optional={
            "user_api": _OPT_STR, "internal_api": _OPT_STR, "prefix": _OPT_STR,
            "filepath": _OPT_STR, "version": _OPT_STR, "threading_layer": _OPT_STR,
            "architecture": _OPT_STR, "num_threads": _OPT_INT})))})),
    "mapped_libraries": Opt(Obj(optional={"libraries": Opt(ListOf(Str()))})),
    "env": Opt(MapOf(_OPT_STR)),
    "cpu": Opt(Obj(optional={
        "machine": _OPT_STR, "vendor": _OPT_STR, "model": _OPT_STR, "family": _OPT_STR,
        "flags": Opt(ListOf(Str())), "logical_cores": _OPT_INT, "allowed_cores": _OPT_INT,
        "affinity": Opt(ListOf(Int())), "cgroup_cpu_quota": _OPT_NUM, "governor": _OPT_STR,
        "mhz": _OPT_NUM, "max_mhz": _OPT_NUM, "bogomips": _OPT_NUM})),
    "gpu": Opt(Obj(optional={
        "available": _OPT_BOOL, "reason": _OPT_STR, "arch_list": Opt(ListOf(Str())),
        "cuda": Opt(Obj(optional={"build": _OPT_STR, "runtime": _OPT_STR, "driver": _OPT_STR,
                                  "runtime_library": _OPT_STR})),
        "cudnn": Opt(Obj(optional={"available": _OPT_BOOL, "runtime": Opt(ListOf(Int())),
                                   "build": Opt(ListOf(Int())), "compatible": _OPT_BOOL})),
        "nccl": _OPT_STR, "first_call_s": _OPT_NUM, "allocator_backend": _OPT_STR,
        "env": Opt(MapOf(_OPT_STR)),
        "sdpa": Opt(Obj(optional={"backend": _OPT_STR, "dtype": _OPT_STR,
                                  "shape": Opt(ListOf(Int()))})),
        "devices": Opt(ListOf(Obj(optional={
            "name": _OPT_STR, "capability": _OPT_STR, "memory_bytes": _OPT_INT,
            "multiprocessors": _OPT_INT, "arch_support": _OPT_STR})))})),
    # probe/hostjob.py (issue 29): read by present/host_view.py and rules/host.py
    "host": Opt(MapOf(Obj(optional={"label": _OPT_STR, "unit": _OPT_STR, "unknown": _OPT_STR,
                                    "source": _OPT_STR}))),
    "isolation": Opt(Obj(optional={"user_site": _OPT_STR})),
    "errors": Opt(ListOf(Obj(optional={"name": _OPT_STR, "exc_type": _OPT_STR,
                                       "message": _OPT_STR}))),
    # probe/facts_more.py: the sections added with schema 2 (issue 27: each was a crash
    # site of `report`/`compare` when retyped)
    "install": Opt(Obj(optional={"kind": _OPT_STR, "root": _OPT_STR, "evidence": _OPT_STR})),
    "system": Opt(Obj(optional={
        "thp_enabled": _OPT_STR, "thp_defrag": _OPT_STR, "rlimits": Opt(MapOf(_OPT_NUM)),
        "numa_nodes": Opt(MapOf(ListOf(Int()))), "process_nodes": Opt(ListOf(Scalar())),
        "gpu_numa": Opt(ListOf(MapOf(Scalar())))})),
    "math": Opt(MapOf(Scalar())),
    "libraries": Opt(Obj(optional={"libraries": Opt(MapOf(Obj(optional={
        "version": _OPT_STR, "path": _OPT_STR})))})),
    "compile": Opt(Obj(optional={
        "cxx": _OPT_STR, "python_h": _OPT_BOOL, "cuda_build": _OPT_BOOL,
        "triton_found": _OPT_BOOL, "triton_version": _OPT_STR, "triton_required": _OPT_STR,
        "smoke": Opt(Obj(optional={"ok": _OPT_BOOL, "seconds": _OPT_NUM,
                                   "error": _OPT_STR}))})),
    "allocator": Opt(MapOf(Scalar())),
})

PROBE = Obj(required={"label": Str(), "python": Str()}, optional={"facts": Opt(FACTS)})

# --- a results document (measurements.AuditResult) ---------------------------------

PARAMS = MapOf(Scalar())
BLOCKS = ListOf(ListOf(Seconds(), min_items=1), min_items=1)

BENCH_RESULT = Obj(required={
    "bench": Str(), "params": PARAMS, "side": Enum("target", "reference"), "pair": Int(0),
    "number_per_run": Int(1), "blocks_s": BLOCKS, "work": Num(), "work_unit": Str()},
    optional={"extra_s": Opt(MapOf(BLOCKS)), "kernels": Opt(ListOf(Str())),
              "contention": Opt(MapOf(Num())),
              "numerics": Opt(MapOf(Scalar()))})

FINDING = Obj(required={
    "rule_id": Str(), "severity": Enum("info", "warning", "error"), "title": Str(),
    "evidence": MapOf(Any()), "advice": Str(), "source": Str()},
    optional={"subject": Str(), "line": Opt(Int()), "affects": ListOf(Str())})

RUNNER_OPTIONS = Obj(optional={
    "pairs": Int(1), "block_s": Num(), "warmup_s": Num(), "settle_s": Num(),
    "min_rounds": Int(1), "max_rounds": Int(1), "bench_budget_s": Num(),
    "min_sample_s": Num(), "request_timeout_s": Num(), "start_timeout_s": Num(),
    "target_env": MapOf(_OPT_STR)})

SKIPPED = Obj(required={"bench": Str(), "side": Str(), "reason": Str()},
              optional={"params": Opt(PARAMS)})

ERROR = Obj(required={"message": Str()}, optional={
    "side": _OPT_STR, "python": _OPT_STR, "pair": _OPT_INT, "bench": _OPT_STR,
    "params": Opt(PARAMS), "stderr_tail": _OPT_STR, "exit_code": _OPT_INT, "kind": _OPT_STR})

RESULTS = Obj(required={"schema_version": Int(), "suite": Str()}, optional={
    "tool_version": Str(), "created_utc": Str(), "host": Str(), "options": RUNNER_OPTIONS,
    "wall_s": Num(), "complete": Bool(), "target": Opt(PROBE), "reference": Opt(PROBE),
    "results": ListOf(BENCH_RESULT), "skipped": ListOf(SKIPPED), "errors": ListOf(ERROR),
    "findings": ListOf(FINDING), "analysis": Opt(MapOf(Any())),
    "conditions": Opt(MapOf(Any()))})


def check_results(document) -> None:
    """SchemaError unless `document` is a well-typed results document (schema 1 to 3)."""
    check(document, RESULTS)


def check_all(document, specs: Sequence[tuple]) -> None:
    """Check several (key, spec) parts of `document` (an object)."""
    for key, spec in specs:
        if key in document:
            check(document[key], spec, key)


# --- an explain document (explain.ExplainResult) -----------------------------------

_PROFILE = Obj(required={
    "workload": Str(), "ops": ListOf(Obj(required={"name": Str(), "self_s": Num()},
                                         optional={"calls": Num()}))},
    optional={"side": Str(), "iterations": Int(), "threads": _OPT_INT, "wall_s": Num(),
              "torch_version": _OPT_STR})

class _ScalarOrMap(Spec):
    """A scalar, or a map of names to optional strings: a trial's `expect` values
    ({"threads": 2}, {"env": {"NVIDIA_TF32_OVERRIDE": null}}; diagnosis.differences)."""

    def check(self, value, path):
        if isinstance(value, dict):
            return MapOf(_OPT_STR).check(value, path)
        return Scalar().check(value, path)


_EXPECTED = _ScalarOrMap()
_TRIAL = Obj(required={
    "trial": Obj(required={"label": Str()}, optional={
        "env": MapOf(_OPT_STR), "benches": ListOf(Str()), "remedy_ids": ListOf(Str()),
        "rule_ids": ListOf(Str()), "expect": MapOf(_EXPECTED)}),
    "applied": Bool(), "effect": Str(), "verdict": Str(),
    "rows": ListOf(Obj(required={"bench": Str(), "params": PARAMS}, optional={
        "gemm": Bool(), "before": _OPT_NUM, "after": _OPT_NUM, "after_ci_low": _OPT_NUM,
        "after_ci_high": _OPT_NUM, "gain": _OPT_NUM}))},
    optional={"error": _OPT_STR, "audit": Opt(RESULTS)})

EXPLAIN = Obj(required={"schema_version": Int(), "kind": Str(), "target": Str(),
                        "reference": Str()}, optional={
    "tool_version": Str(), "created_utc": Str(), "host": Str(), "wall_s": Num(),
    "profile_s": Num(), "results_file": _OPT_STR,
    "profiles": ListOf(Obj(required={"workload": Str(), "target": _PROFILE,
                                     "reference": _PROFILE})),
    "skipped": ListOf(Obj(optional={"remedy_id": _OPT_STR, "rule_id": _OPT_STR,
                                    "reason": _OPT_STR})),
    "rebuild": ListOf(Obj(optional={"rule_id": _OPT_STR, "why": _OPT_STR})),
    "errors": ListOf(Obj(optional={"message": _OPT_STR})),
    "trials": ListOf(_TRIAL)})


def check_explain(document) -> None:
    """SchemaError unless `document` is a well-typed explain document."""
    check(document, EXPLAIN)


# --- a fleet manifest (fleet.plan.FleetManifest) -----------------------------------

_JOB_STATE = Obj(required={"job_id": Str(), "state": Str()}, optional={
    "exit_code": _OPT_INT, "signal": Int(), "node": Str(), "elapsed": Str(), "reason": Str(),
    "source": Str()})

MANIFEST = Obj(required={
    "manifest_version": Int(),
    "sbatch": Obj(optional={"account": _OPT_STR, "time": _OPT_STR, "cpus_per_task": Opt(Int(1)),
                            "gres": _OPT_STR, "constraint": _OPT_STR, "extra": ListOf(Str())}),
    "audit": Obj(required={"launcher": ListOf(Str(), min_items=1), "reference": _OPT_STR},
                 optional={"suite": Str(), "only": ListOf(Str()), "pairs": Opt(Int(1)),
                           "worker_timeout_s": Num(positive=True)}),
    "jobs": ListOf(Obj(required={"name": FileName(), "partition": Str(), "target": Str()},
                       optional={"kind": Enum("python", "module"), "job_id": _OPT_STR,
                                 "state": Opt(_JOB_STATE), "note": Str()}))},
    optional={"directory": Str(), "created_utc": Str(), "deadline_s": _OPT_NUM})


def check_manifest(document) -> None:
    """SchemaError unless `document` is a well-typed fleet manifest."""
    check(document, MANIFEST)
