"""Benchmark groups the diagnosis reasons about, derived from the registry's tags.

Each group is the registered CPU benchmarks whose `Benchmark.stresses` holds a tag
(probe/registry.py STRESSES), in registry order, so a new benchmark joins the rules and
remedy trials of what it stresses by being tagged, never by editing a list here.
"""

from typing import Tuple

from eb_torchperf.probe import registry


def stressing(tag: str, device: str = "cpu") -> Tuple[str, ...]:
    """Names of the registered `device` benchmarks tagged `tag`, in registry order.

    Raises:
        ValueError: `tag` is not in registry.STRESSES.
    """
    if tag not in registry.STRESSES:
        raise ValueError("unknown tag %r (known: %s)" % (tag, ", ".join(registry.STRESSES)))
    return tuple(b.name for b in registry.load_suites().values()
                 if b.device == device and tag in b.stresses)


#: Benchmarks whose time is mostly BLAS sgemm, one rate per row (thread_scaling, whose
#: rows differ by thread count, is read apart: evidence.gemm_rows).
GEMM_BENCHES = tuple(b for b in stressing("blas")
                     if registry.REGISTRY[b].family != "threads")
#: Benchmarks that run through oneDNN on x86-64 when it is enabled.
ONEDNN_BENCHES = stressing("onednn")
#: Benchmarks run by ATen's vectorised kernels (dispatch by CPU capability).
VECTORISED_BENCHES = stressing("aten_vectorised")
#: Benchmarks limited by memory bandwidth (rated against the measured add bandwidth).
BANDWIDTH_BOUND = stressing("memory_bound")
#: Benchmarks whose time depends on torch's intra-op threads.
THREADED_BENCHES = stressing("intra_op_threads")
#: Rows a change of CPU capability can move: the vectorised and the memory-bound ones.
CAPABILITY_BENCHES = tuple(dict.fromkeys(VECTORISED_BENCHES + BANDWIDTH_BOUND))
