"""Builders shared by the explain/remedy tests: real config texts and probe facts.

Facts come from tests/data (see its README): real `torch.__config__` texts and real
probe documents; tests change single fields by hand to reach the other cases.
"""

import copy
import json
import pathlib


from eb_torchperf.records.measurements import BenchResult, ProbeResult

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


#: Self CPU seconds per step of the BERT-like layer in eval, as profiled on the dev machine
#: (Debian python3-torch 1.13 vs the torch 2.13.0 wheel, 2026-11-30), largest operators.
DEBIAN_BERT_EVAL = {"aten::addmm": 0.3254, "aten::_addmm_activation": 0.2907, "aten::mm": 0.2097,
                    "aten::bmm": 0.0038, "aten::_transform_bias_rescale_qkv": 0.0024,
                    "aten::native_layer_norm": 0.0001, "aten::_softmax": 0.00006}
WHEEL_BERT_EVAL = {"aten::mm": 0.0177, "aten::addmm": 0.0108, "aten::_addmm_activation": 0.0024,
                   "aten::bmm": 0.0041, "aten::_transform_bias_rescale_qkv": 0.0073,
                   "aten::native_layer_norm": 0.00005, "aten::_softmax": 0.0040}
