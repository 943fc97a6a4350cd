"""Results data: what one audit measured, as frozen records with a versioned JSON form.

Schema history (SCHEMA_VERSION):
  1 (2026-11-30): first version: target/reference probes, per-block samples, skipped
    benchmarks, errors, findings.
  1 (2026-11-30, later): additive: BenchResult.extra_s (metric -> blocks, e.g. CPU and GPU
    seconds per call of CUDA work); documents without it still load (empty).
  2 (2026-12-01): additive: `analysis` (analysis_doc: per-row relative OPS, interval,
    significance, noise flags, family; geometric mean; the differences between the two
    sides; the verdict), Finding.affects, probe facts system/math/libraries/compile.
    Version 1 documents load unchanged (analysis is recomputed, never read).
  2 (2026-12-01, later): additive: BenchResult.kernels (the ATen kernels that held one
    call's time, for rows that record them: probe.profile.call_kernels); documents
    without it still load (empty).
  3 (2026-12-02): additive: BenchResult.contention (how busy the allowed CPUs were
    while that result was measured: other_cpu, steal, self_cpu, runq;
    measure.contention) and AuditResult.conditions (worker_mode fork/spawn, host load
    summary, allowed_cpus); documents without them load (empty: not measured).
  3 (2026-12-02): additive: BenchResult.numerics (per side, first pair: the row's error
    against float64 on formula inputs -- max_rel, norm_rel, flushed, dtype, bound, depth,
    math_mode; whole models: loss, grad_norm; probe.numerics); documents without it
    load ({}).
  3 (2026-12-02): additive: probe facts `host` (probe/hostjob.py: the host and job checks,
    each a value or "unknown" with the reason) and `isolation`; differences carry their
    documented `effect` (diagnosis/effects.py).  Versions 1 and 2 load (no host section).
  3 (2026-12-02): additive: an error entry's `kind` ("interrupted" for Ctrl-C/SIGTERM:
    AuditResult.outcome; older documents are read by their message); the `analysis`
    section's rows carry every Comparison field (records.analysis.row_json).

Times are stored raw, in seconds per call, one float per sample, grouped in blocks
(one block per round); display units are chosen only when rendering.
"""

import dataclasses
import json
import math
from typing import Dict, List, Optional, Tuple

from eb_torchperf import __version__
from eb_torchperf.records import safe_write, validate
from eb_torchperf.records.buildconfig import BuildConfig, parse_parallel_info, parse_show
from eb_torchperf.errors import SchemaError
from eb_torchperf.records.findings import (COMPLETE, CUT_SHORT, INTERRUPTED, INTERRUPTED_KIND,
                                           INTERRUPTED_RUN, Finding)
from eb_torchperf.probe.registry import WORK_UNITS

SCHEMA_VERSION = 3
#: Versions this module reads (older ones lack only additive fields).
READABLE_VERSIONS = (1, 2, 3)
SIDES = ("target", "reference")


def params_key(params: dict) -> str:
    """Canonical text of a parameter dict, used to pair results across sides."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


@dataclasses.dataclass(frozen=True)
class BenchResult:
    """Samples of one benchmark, one side, one worker process (pair).

    Attributes:
        bench: registry name.
        params: benchmark parameters.
        side: "target" or "reference".
        pair: index of the worker pair (fresh processes) that measured it.
        number_per_run: calls per sample.
        blocks_s: one tuple per round, one float per sample: seconds per call.
        work: work per call, in `work_unit` ("flop", "byte" or "op").
        work_unit: key of probe.registry.WORK_UNITS.
        extra_s: metric name -> blocks shaped like blocks_s (one value per sample),
            seconds per call; e.g. "cpu_s"/"gpu_s" of CUDA benchmarks.  Empty for most.
        kernels: the ATen operators that held the time of one profiled call, largest
            first (registry.Benchmark.records_kernels; first pair only), e.g.
            ("aten::_slow_conv2d_forward",).  Empty for most.
        contention: how busy the allowed CPUs were over this result's warm-ups and
            blocks (measure.contention.fractions): other_cpu, steal (fractions 0..1),
            self_cpu (own CPU s per wall s), runq (tasks waiting beyond the CPUs); a
            missing key was not measured.
        numerics: the row's numerical error in this process (first pair only; probe.
            numerics): {"max_rel", "norm_rel" (floats, vs float64), "flushed" (elements
            flushed to zero), "dtype", "bound" (expected norm-wise error), "depth",
            "math_mode" (the fp32 math mode the row ran in, one "name=value" line:
            probe.facts_more.fp32_math_mode)}; model rows {"loss", "grad_norm",
            "dtype", "math_mode"}; {"error": message} where the check failed; empty
            where not computed.

    Raises:
        ValueError: unknown side or unit, a time <= 0, an empty block, number < 1, an
            extra metric whose blocks do not match blocks_s in number.
    """

    bench: str
    params: Dict[str, object]
    side: str
    pair: int
    number_per_run: int
    blocks_s: Tuple[Tuple[float, ...], ...]
    work: float
    work_unit: str
    extra_s: Dict[str, Tuple[Tuple[float, ...], ...]] = dataclasses.field(default_factory=dict)
    kernels: Tuple[str, ...] = ()
    contention: Dict[str, float] = dataclasses.field(default_factory=dict)
    numerics: Dict[str, object] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.side not in SIDES:
            raise ValueError("side must be one of %s, not %r" % (SIDES, self.side))
        if self.work_unit not in WORK_UNITS:
            raise ValueError("unknown work unit %r" % self.work_unit)
        if self.number_per_run < 1:
            raise ValueError("number_per_run must be >= 1")
        if not self.blocks_s or any(not block for block in self.blocks_s):
            raise ValueError("%s: every block needs at least one sample" % self.bench)
        if any(not (t > 0 and math.isfinite(t)) for block in self.blocks_s for t in block):
            raise ValueError("%s: times must be finite and > 0" % self.bench)
        for metric, blocks in self.extra_s.items():
            if len(blocks) != len(self.blocks_s) or any(not block for block in blocks):
                raise ValueError("%s: extra metric %r needs one non-empty block per block of "
                                 "blocks_s" % (self.bench, metric))
            if any(not (t > 0 and math.isfinite(t)) for block in blocks for t in block):
                raise ValueError("%s: extra metric %r: times must be finite and > 0"
                                 % (self.bench, metric))

    @property
    def key(self) -> Tuple[str, str]:
        """(bench, canonical params) — what pairs target and reference results."""
        return self.bench, params_key(self.params)

    @property
    def times_s(self) -> Tuple[float, ...]:
        """All samples, seconds per call."""
        return tuple(t for block in self.blocks_s for t in block)

    def extra_times_s(self, metric: str) -> Tuple[float, ...]:
        """All samples of an extra metric, seconds per call (empty when not measured)."""
        return tuple(t for block in self.extra_s.get(metric, ()) for t in block)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["blocks_s"] = [list(b) for b in self.blocks_s]
        data["extra_s"] = {k: [list(b) for b in v] for k, v in self.extra_s.items()}
        data["kernels"] = list(self.kernels)
        return data

    @classmethod
    def from_json(cls, data: dict) -> "BenchResult":
        data = dict(data)
        data["blocks_s"] = tuple(tuple(b) for b in data["blocks_s"])
        data["extra_s"] = {k: tuple(tuple(b) for b in v)
                           for k, v in (data.get("extra_s") or {}).items()}
        data["kernels"] = tuple(data.get("kernels") or ())
        data["contention"] = dict(data.get("contention") or {})
        data["numerics"] = dict(data.get("numerics") or {})
        return cls(**data)


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    """Facts about one interpreter's torch, as collected by the probe.

    Attributes:
        label: "target" or "reference".
        python: the interpreter path as given by the user.
        facts: the probe's raw facts document (see probe.facts.collect_all).
        build: parsed `torch.__config__.show()`.
        parallel: parsed `torch.__config__.parallel_info()`.
    """

    label: str
    python: str
    facts: dict
    build: BuildConfig
    parallel: dict

    @classmethod
    def from_facts(cls, label: str, python: str, facts: dict) -> "ProbeResult":
        """Build from the probe's facts, parsing the config texts (empty if missing)."""
        torch_facts = (facts or {}).get("torch") or {}
        show = torch_facts.get("config_show") or ""
        build = parse_show(show) if "PyTorch built with" in show else BuildConfig()
        parallel = parse_parallel_info(torch_facts.get("parallel_info") or "")
        return cls(label=label, python=python, facts=facts or {}, build=build, parallel=parallel)

    def fact(self, section: str, key: str, default=None):
        """`facts[section][key]`, or `default` when the probe could not collect it."""
        return ((self.facts or {}).get(section) or {}).get(key, default)

    def to_json(self) -> dict:
        return {"label": self.label, "python": self.python, "facts": self.facts}

    @classmethod
    def from_json(cls, data: dict) -> "ProbeResult":
        """Raises TypeError where the facts are not an object (AuditResult.from_json
        turns it into a SchemaError)."""
        if not isinstance(data.get("facts"), (dict, type(None))):
            raise TypeError("%s facts are %s, not an object"
                            % (data.get("label", "probe"), type(data["facts"]).__name__))
        return cls.from_facts(data["label"], data["python"], data["facts"])


def _objects(data: dict, key: str) -> tuple:
    """`data[key]` as a tuple of JSON objects (TypeError for anything else)."""
    items = data.get(key) or []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise TypeError("%r must be a list of objects" % key)
    return tuple(items)


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Everything one audit produced; the unit of storage, re-rendering and comparison.

    Attributes:
        suite: "quick" or "full".
        options: the runner settings used (block_s, pairs, ...).
        target, reference: the probes (reference None when audited alone).
        results: every BenchResult, both sides, all pairs.
        skipped: {bench, params, side, reason} for benchmarks not run.
        errors: {side, python, bench, message} for failures during the run.
        complete: False when the run was cut short (a worker died or hung).
        findings: diagnosis results (filled by diagnose; empty until then).
        wall_s: wall time of the whole audit, seconds.
        created_utc: ISO 8601 time the audit started.
        conditions: how it was measured: worker_mode ("fork" or "spawn"),
            allowed_cpus, the host load summary (measure.contention.host_load:
            other_cpu_median, other_cpu_max, busy, ...), waited_idle_s; {} for
            documents before schema 3.
    """

    suite: str
    options: Dict[str, object]
    target: Optional[ProbeResult]
    reference: Optional[ProbeResult]
    results: Tuple[BenchResult, ...] = ()
    skipped: Tuple[dict, ...] = ()
    errors: Tuple[dict, ...] = ()
    complete: bool = True
    findings: Tuple[Finding, ...] = ()
    wall_s: float = 0.0
    created_utc: str = ""
    host: str = ""
    tool_version: str = __version__
    conditions: Dict[str, object] = dataclasses.field(default_factory=dict)

    def results_for(self, side: str) -> List[BenchResult]:
        """The results of one side, in measurement order."""
        return [r for r in self.results if r.side == side]

    @property
    def outcome(self) -> str:
        """How the run ended: records.findings COMPLETE, INTERRUPTED_RUN (Ctrl-C or
        SIGTERM: its last error has kind "interrupted"; in documents of schema 1 and 2,
        the INTERRUPTED message) or CUT_SHORT (a worker died or hung)."""
        if self.complete:
            return COMPLETE
        last = self.errors[-1] if self.errors else {}
        stopped = (last.get("kind") == INTERRUPTED_KIND
                   or ("kind" not in last and last.get("message") == INTERRUPTED))
        return INTERRUPTED_RUN if stopped else CUT_SHORT

    def to_json(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION, "tool_version": self.tool_version,
            "created_utc": self.created_utc, "host": self.host, "suite": self.suite,
            "options": self.options, "wall_s": self.wall_s, "complete": self.complete,
            "target": self.target.to_json() if self.target else None,
            "reference": self.reference.to_json() if self.reference else None,
            "results": [r.to_json() for r in self.results],
            "skipped": list(self.skipped), "errors": list(self.errors),
            "findings": [f.to_json() for f in self.findings],
            "conditions": dict(self.conditions),
        }

    @classmethod
    def from_json(cls, data: dict) -> "AuditResult":
        """Load a results document.

        Raises:
            SchemaError: not an eb_torchperf results document, or a schema version
                this version cannot read.
        """
        if not isinstance(data, dict) or "schema_version" not in data:
            raise SchemaError("not an eb_torchperf results document (no schema_version)")
        if data.get("kind") == "eb_torchperf-explain":
            raise SchemaError("this is an explain document; give the results JSON it was "
                              "made from (the same name without .explain)")
        if data["schema_version"] not in READABLE_VERSIONS:
            raise SchemaError("results schema version %r is not supported (this eb_torchperf "
                              "reads versions %s); re-run the audit or upgrade eb_torchperf"
                              % (data["schema_version"],
                                 ", ".join(map(str, READABLE_VERSIONS))))
        validate.check_results(data)  # types per field: the first bad one, by its path
        if not data.get("target") and data.get("results"):
            raise SchemaError("malformed results document: results were measured but the "
                              "target side is %r" % (data.get("target"),))
        try:
            return cls(
                suite=data["suite"], options=data.get("options", {}),
                target=ProbeResult.from_json(data["target"]) if data.get("target") else None,
                reference=(ProbeResult.from_json(data["reference"])
                           if data.get("reference") else None),
                results=tuple(BenchResult.from_json(r) for r in data.get("results", ())),
                skipped=tuple(data.get("skipped", ())), errors=_objects(data, "errors"),
                complete=bool(data.get("complete", True)),
                findings=tuple(Finding.from_json(f) for f in data.get("findings", ())),
                wall_s=float(data.get("wall_s", 0.0)), created_utc=data.get("created_utc", ""),
                host=data.get("host", ""), tool_version=data.get("tool_version", ""),
                conditions=dict(data.get("conditions") or {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise SchemaError("malformed results document: %s: %s"
                              % (type(exc).__name__, exc)) from None

    def to_document(self, analysis: Optional[dict] = None) -> dict:
        """`to_json()` plus the `analysis` section when given (present.analysis_doc
        builds it; records cannot, being left of analysis and diagnosis)."""
        data = self.to_json()
        if analysis is not None:
            data["analysis"] = analysis
        return data

    def save(self, path, analysis: Optional[dict] = None) -> None:
        """Write the JSON document (with `analysis` when given) to `path` (parent
        folders are created)."""
        save_document(path, self.to_document(analysis))


def save_document(path, data: dict) -> None:
    """Write `data` as indented JSON to `path`, creating parent folders; atomically
    (safe_write): a failure raises WriteError and leaves the previous file intact."""
    safe_write.write_json(path, data)


def read_json(path, error=SchemaError):
    """The JSON value in the file `path`.

    Raises:
        error (SchemaError by default): unreadable, empty, not JSON, or nested too
            deeply for the parser (the message names path).
    """
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError as exc:
        raise error("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    if not text.strip():
        raise error("%s is empty: no results were written to it" % path)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise error("%s is not JSON: %s" % (path, exc)) from None
    except RecursionError:
        raise error("%s is not a results document: nested too deeply" % path) from None


def load_document(path, from_json):
    """Read a JSON file and build it with `from_json(data)`.

    Raises:
        SchemaError: unreadable, not JSON, or rejected by `from_json` (message names path).
    """
    data = read_json(path)
    try:
        return from_json(data)
    except SchemaError as exc:
        raise SchemaError("%s: %s" % (path, exc)) from None


def load_results(path) -> AuditResult:
    """Read a results JSON file.

    Raises:
        SchemaError: unreadable, not JSON, or not a results document (message names path).
    """
    return load_document(path, AuditResult.from_json)
