"""Inputs for rule, peak and report tests: ProbeResults from real texts and probes, BenchResults by hand.

Sources (see tests/data/README.md): the six real `torch.__config__.show()` texts in
tests/data/config/, real probe documents in tests/data/probes/, and the real short
audit in tests/data/results-debian-vs-wheel-v1.json (Debian python3-torch vs the
torch 2.13.0 wheel on a 2-core AMD EPYC, Zen 4).
"""

import copy
import dataclasses
import json
import pathlib

from eb_torchperf.records.buildconfig import parse_show
from eb_torchperf.analysis.compare import compare_pair
from eb_torchperf.records.measurements import AuditResult, BenchResult, ProbeResult

DATA = pathlib.Path(__file__).resolve().parent / "data"
CONFIG = DATA / "config"
GOLDEN = DATA / "results-debian-vs-wheel-v1.json"

DEBIAN = "debian-12-python3-torch-1.13.1-source"
EASYBUILD = "easybuild-2.9.1-foss-2025a-CUDA-12.8.0-source"
WHEEL_291 = "wheel-2.9.1-cu128-on-easybuild"
WHEEL_1131 = "wheel-1.13.1-cu117"
WHEEL_2110 = "wheel-2.11.0-cu130-h200"
WHEEL_2130 = "wheel-2.13.0-cpu"

#: FlexiBLAS of an EasyBuild foss/2025a stack, as threadpoolctl >= 3.3 reports it
#: (controller fields available_backends / loaded_backends / current_backend).
EB_ROOT = "/apps/easybuild/software"
FLEXIBLAS_MAPPED = [
    EB_ROOT + "/FlexiBLAS/3.4.5-GCC-14.2.0/lib/libflexiblas.so.3.4",
    EB_ROOT + "/FlexiBLAS/3.4.5-GCC-14.2.0/lib/flexiblas/libflexiblas_openblas.so",
    EB_ROOT + "/OpenBLAS/0.3.29-GCC-14.2.0/lib/libopenblas.so.0",
    EB_ROOT + "/GCCcore/14.2.0/lib64/libgomp.so.1.0.0",
]
FLEXIBLAS_POOLS = [
    {"user_api": "blas", "internal_api": "flexiblas", "num_threads": 2, "prefix": "libflexiblas",
     "filepath": FLEXIBLAS_MAPPED[0], "version": "3.4.5",
     "available_backends": ["NETLIB", "OPENBLAS", "BLIS", "IMKL"],
     "loaded_backends": ["OPENBLAS"], "current_backend": "OPENBLAS"},
    {"user_api": "blas", "internal_api": "openblas", "num_threads": 2, "prefix": "libopenblas",
     "filepath": FLEXIBLAS_MAPPED[2], "version": "0.3.29", "threading_layer": "openmp",
     "architecture": "SapphireRapids"},
    {"user_api": "openmp", "internal_api": "openmp", "num_threads": 2, "prefix": "libgomp",
     "filepath": FLEXIBLAS_MAPPED[3], "version": None},
]


def golden_document() -> dict:
    """The real short audit, as JSON."""
    return json.loads(GOLDEN.read_text())


def golden_result() -> AuditResult:
    """The real short audit as an AuditResult (findings as stored)."""
    return AuditResult.from_json(golden_document())


def golden_probe(side: str) -> ProbeResult:
    """Debian torch 1.13 ("target") or the torch 2.13.0 wheel ("reference"), as probed."""
    return getattr(golden_result(), side)


def real_probe(name: str, label: str = "target") -> ProbeResult:
    """A probe document of tests/data/probes/ as a ProbeResult."""
    document = json.loads((DATA / "probes" / (name + ".json")).read_text())
    return ProbeResult.from_facts(label, document["python"], document["facts"])


def config_text(name: str) -> str:
    """A real show() text of tests/data/config/."""
    return (CONFIG / (name + ".txt")).read_text()


def probe_from_config(name: str, label: str = "target", **changes) -> ProbeResult:
    """The dev machine's facts (from the golden Debian probe) with the build text `name`.

    Args:
        name: a tests/data/config/ stem; its show() and parallel_info() (when present)
            replace the probe's; torch.version becomes its TORCH_VERSION; the run-time
            capability is taken from the text's "CPU capability usage" line.
        changes: "section.key" (double underscore for the dot) -> value overrides, e.g.
            cpu__allowed_cores=4, mapped_libraries__libraries=[...].
    """
    facts = copy.deepcopy(golden_document()["target"]["facts"])
    text = config_text(name)
    parallel = CONFIG / (name + ".parallel_info.txt")
    facts["torch"].update(config_show=text, version=parse_show(text).torch_version,
                          cpu_capability=None,
                          parallel_info=parallel.read_text() if parallel.exists() else "")
    for key, value in changes.items():
        section, field = key.split("__", 1)
        facts.setdefault(section, {})[field] = value
    return ProbeResult.from_facts(label, "/opt/%s/bin/python" % name, facts)


def with_facts(probe: ProbeResult, **changes) -> ProbeResult:
    """A copy of `probe` with "section__key" facts replaced (see probe_from_config)."""
    facts = copy.deepcopy(probe.facts)
    for key, value in changes.items():
        section, field = key.split("__", 1)
        facts.setdefault(section, {})[field] = value
    return ProbeResult.from_facts(probe.label, probe.python, facts)


def with_section(probe: ProbeResult, section: str, value, **changes) -> ProbeResult:
    """A copy of `probe` whose facts[section] is `value`, then `changes` (with_facts)."""
    facts = copy.deepcopy(probe.facts)
    facts[section] = value
    return with_facts(ProbeResult.from_facts(probe.label, probe.python, facts), **changes)


def bench_pair(bench: str, params: dict, ratio: float, reference_s: float = 1e-3,
               work=(2.0 * 512 ** 3, "flop"), rounds: int = 4):
    """Target and reference BenchResults whose relative OPS is `ratio` in every round.

    Samples jitter by +-1 % around the medians (same pattern on both sides), so the
    interval is tight and the ratio exact.
    """
    pattern = (0.99, 1.0, 1.01)

    def side(name, seconds):
        return BenchResult(bench, params, name, 0, 1,
                           tuple(tuple(seconds * p for p in pattern) for _ in range(rounds)),
                           work[0], work[1])
    return side("target", reference_s / ratio), side("reference", reference_s)


def comparisons(*specs):
    """Comparisons from (bench, params, ratio) specs via compare.compare_pair, each row
    over two identical worker pairs (one pair's interval also carries the unmeasured
    difference between processes: stats.two_level_ratio_with_ci)."""
    out = []
    for bench, params, ratio in specs:
        target, reference = bench_pair(bench, params, ratio)
        second = [dataclasses.replace(r, pair=1) for r in (target, reference)]
        out.append(compare_pair([target, second[0]], [reference, second[1]]))
    return out


def target_only(bench: str, params: dict, gflops: float, work_flop: float = 2.0 * 512 ** 3):
    """A Comparison with only a target rate of `gflops` GFLOP/s (no reference run)."""
    seconds = work_flop / (gflops * 1e9)
    result = BenchResult(bench, params, "target", 0, 1, ((seconds, seconds, seconds),),
                         work_flop, "flop")
    return compare_pair([result], [])


def timed_only(bench: str, params: dict, seconds: float):
    """A target-only Comparison of a byte-unit benchmark whose median is `seconds`."""
    result = BenchResult(bench, params, "target", 0, 1, ((seconds,) * 3,), 1e6, "byte")
    return compare_pair([result], [])
