"""Builders shared by the explain/remedy tests: real config texts and probe facts.

Facts come from tests/data (see its README): real `torch.__config__` texts and real
probe documents; tests change single fields by hand to reach the other cases.
"""

import copy
import json
import pathlib


from eb_torchperf.measurements import BenchResult, ProbeResult

DATA = pathlib.Path(__file__).parent / "data"
DEBIAN_FACTS = "debian-12-python3-torch-1.13.1"
WHEEL_FACTS = "wheel-2.13.0-cpu"
EASYBUILD_CONFIG = "easybuild-2.9.1-foss-2025a-CUDA-12.8.0-source.txt"
#: CPU flags of the dev machine (AMD EPYC, AVX512), as the probe reported them.
AVX512_FLAGS = ["avx", "avx2", "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl",
                "f16c", "fma", "sse4_2"]


def config_text(name: str) -> str:
    """A real torch.__config__ text from tests/data/config."""
    return (DATA / "config" / name).read_text()


def golden_facts(name: str) -> dict:
    """A deep copy of the facts of a real probe run (tests/data/probe/NAME.facts.json)."""
    return copy.deepcopy(json.loads((DATA / "probe" / (name + ".facts.json")).read_text())["facts"])


def probe_from(facts: dict, label: str = "target", python: str = "/opt/python") -> ProbeResult:
    return ProbeResult.from_facts(label, python, facts)


def facts_for_config(config: str, threads: int, cores: int, parallel: str = "") -> dict:
    """Facts of an imagined target: a real config text plus hand-written run-time facts."""
    return {"errors": [], "env": {},
            "torch": {"version": "2.9.1", "config_show": config_text(config),
                      "parallel_info": parallel or "ATen parallel backend: OpenMP\n",
                      "cpu_capability": None, "intra_op_threads": threads,
                      "openmp_available": True, "mkl_available": False},
            "threadpools": {"available": True, "pools": []},
            "mapped_libraries": {"libraries": []},
            "cpu": {"machine": "x86_64", "flags": list(AVX512_FLAGS), "logical_cores": cores,
                    "allowed_cores": cores, "cgroup_cpu_quota": None}}


def bench(name: str, side: str, seconds, params=None, pair: int = 0, unit: str = "flop"):
    """A BenchResult with one sample per round (seconds per call, one float per round)."""
    return BenchResult(bench=name, params=params or {"n": 512}, side=side, pair=pair,
                       number_per_run=1, blocks_s=tuple((s,) for s in seconds), work=1e9,
                       work_unit=unit)


