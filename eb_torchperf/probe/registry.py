"""Benchmark registry: what can be measured, with which parameters, in which suite.

A benchmark is data plus two small functions: `setup(torch, params)` builds the
tensors and returns the zero-argument callable that is timed; `work(params)` says how
much work one call does.  Suites (`quick`, `full`, `models`) pick parameter sets.  Other
modules (`suite_cpu`, `suite_gpu`, `suite_models`) call `register()`; the host imports this same module to
plan an audit, so host and target agree on names.
"""

import dataclasses
import difflib
import json
from typing import Callable, Dict, List, Optional, Sequence, Tuple

#: Units of work per call, and the rate each becomes in reports.
WORK_UNITS = {"flop": "GFLOP/s", "byte": "GB/s", "op": "µs/op"}
SUITES = ("quick", "full", "models")
#: What a benchmark's time depends on, beyond its family (Benchmark.stresses).  The
#: diagnosis derives its benchmark groups from these tags (diagnosis/families.py), so a
#: new benchmark joins every rule and remedy trial of what it stresses by its tags.
STRESSES = {
    "blas": "BLAS sgemm/addmm (MKL, OpenBLAS, FlexiBLAS, reference BLAS)",
    "onednn": "oneDNN (mkldnn) kernels: convolution, bf16 GEMM",
    "aten_vectorised": "ATen's vectorised CPU kernels, chosen by CPU capability",
    "memory_bound": "memory bandwidth more than arithmetic",
    "intra_op_threads": "torch's intra-op thread pool (OpenMP), all allowed cores",
}


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One registered benchmark.

    Attributes:
        name: stable identifier, e.g. "matmul_fp32".
        device: "cpu" or "cuda".
        family: what it stresses (and which TorchBench models it stands for).
        params: suite -> tuple of parameter dicts (JSON values only).
        setup: (torch, params) -> zero-argument callable to time; it may also have
            `.extra()` -> {metric: seconds per call}, measured by the worker after each
            sample (e.g. cuda_timing.DispatchTimer: CPU and GPU time per call).
        work: params -> (amount per call, unit in WORK_UNITS).
        available: (torch, facts) -> None if it can run, else the reason.
        description: one line for reports.
        min_sample_s: floor on the seconds of one sample, above the audit's own
            (RunnerOptions.min_sample_s), for benchmarks with a fixed cost per sample
            that more calls per sample must amortise (see suite_gpu's all-reduce).
        stresses: tags from STRESSES: the libraries and resources its time depends on.
        min_rounds: rounds per pair at least, below the audit's own (None: the audit's);
            whole models (suite_models) use 1, so a build at 1 % still ends.
        budget_s: the benchmark's own bench_budget_s (None: the audit's).
        scale: (params, cores) -> params for a benchmark that runs on all allowed
            cores: its size grows with the host so that a 16-128-core node does not
            time fork/join instead of the kernel (issue 16).  Applied by plan() on the
            host, so both sides get the same sizes and the results record them.
        one_thread: it runs on the calling thread only (no intra-op pool): the runner
            moves both sides' calling thread onto the same CPU each round, a new CPU
            every round (RunnerOptions.rotate_cpus).  Rows with params threads == 1
            and CUDA rows are treated alike (single_threaded()).
        records_kernels: the first pair's workers profile a call of it once all their
            timed blocks are done (measure.evidence) and report the ATen kernels that
            held its time
            (profile.call_kernels): which path the build took for this shape (a 1x1
            convolution on oneDNN or on im2col + BLAS), for the prediction of the
            models (analysis.model_prediction) and the report.
    """

    name: str
    device: str
    family: str
    params: Dict[str, Tuple[dict, ...]]
    setup: Callable
    work: Callable[[dict], Tuple[float, str]]
    available: Callable = lambda torch, facts: None
    description: str = ""
    min_sample_s: float = 0.0
    stresses: Tuple[str, ...] = ()
    min_rounds: Optional[int] = None
    budget_s: Optional[float] = None
    scale: Optional[Callable[[dict, int], dict]] = None
    one_thread: bool = False
    records_kernels: bool = False

    def single_threaded(self, params: dict) -> bool:
        """True when the host side of a row with `params` runs on the calling thread
        only: one_thread rows, threads == 1 rows, and every CUDA row (one Python thread
        launches its kernels; on the 16-core H200 host a regnet_y_400mf inference step
        took 17 ms in one fresh process and 8-9 ms in the next, issue 16)."""
        return self.device == "cuda" or self.one_thread or params.get("threads") == 1

    def __post_init__(self):
        unknown = set(self.stresses) - set(STRESSES)
        if unknown:
            raise ValueError("benchmark %r: unknown stresses %s (known: %s)"
                             % (self.name, sorted(unknown), ", ".join(STRESSES)))

    @property
    def suites(self) -> str:
        """The suites that run it, e.g. "quick/full" (for messages)."""
        return "/".join(s for s in SUITES if self.params.get(s))

    def params_for(self, suite: str) -> Tuple[dict, ...]:
        """Parameter sets of `suite` (empty when the suite does not run it)."""
        return self.params.get(suite, ())


REGISTRY: Dict[str, Benchmark] = {}

#: Core count the suites' sizes were chosen for (the 2-core dev machine): scale() is the
#: identity up to this many cores.
BASE_CORES = 2


def params_json(params: dict) -> str:
    """Canonical JSON of a parameter dict (a key for grouping)."""
    return json.dumps(params, sort_keys=True)


def core_factor(cores: Optional[int]) -> float:
    """How many times the dev machine's cores a host has (>= 1)."""
    return max(1.0, (cores or BASE_CORES) / BASE_CORES)


def inference(torch, module, *inputs):
    """A benchmark's call: `module(*inputs)` without autograd (torch.no_grad), as an
    inference step runs it."""
    def call():
        with torch.no_grad():
            module(*inputs)
    return call


def scaled(key, power=1.0, cap=8.0, multiple=1):
    """A Benchmark.scale: params[key] times core_factor(cores)**power (at most `cap`
    times), rounded to `multiple`; the identity on the 2-core dev machine."""
    def scale(params, cores):
        factor = min(cap, core_factor(cores) ** power)
        if factor > 1.0:
            value = int(round(params[key] * factor / multiple)) * multiple
            params = dict(params, **{key: max(params[key], value)})
        return params
    return scale


def register(bench: Benchmark) -> Benchmark:
    """Add `bench` to the registry; a second benchmark with the same name is an error."""
    if bench.name in REGISTRY:
        raise ValueError("benchmark %r registered twice" % bench.name)
    for unit in {bench.work(p)[1] for suite in bench.params.values() for p in suite}:
        if unit not in WORK_UNITS:
            raise ValueError("benchmark %r: unknown work unit %r" % (bench.name, unit))
    REGISTRY[bench.name] = bench
    return bench


#: Suite modules in registry (and so plan and report) order.
SUITE_MODULES = ("suite_cpu", "suite_cpu_layers", "suite_gpu", "suite_models")


def load_suites() -> Dict[str, Benchmark]:
    """Import the suite modules (which register themselves) and return the registry,
    ordered by SUITE_MODULES whichever module another import loaded first."""
    from . import suite_cpu, suite_cpu_layers, suite_gpu, suite_models  # noqa: F401  (registration)
    rank = {name: index for index, name in enumerate(SUITE_MODULES)}
    ordered = sorted(REGISTRY.items(), key=lambda item: rank.get(
        item[1].setup.__module__.rsplit(".", 1)[-1], len(rank)))
    if list(REGISTRY) != [name for name, _ in ordered]:
        REGISTRY.clear()
        REGISTRY.update(ordered)
    return REGISTRY


def _suggest(unknown: List[str], known) -> str:
    """" Did you mean gelu or matmul_fp32?" for the close names of `unknown` (difflib),
    else ""."""
    close = sorted({c for name in unknown for c in difflib.get_close_matches(name, known, 3)})
    if not close:
        return ""
    return " Did you mean %s?" % (" or ".join(close) if len(close) < 3
                                  else ", ".join(close[:-1]) + " or " + close[-1])


def plan(suite: str, devices: Sequence[str] = ("cpu",),
         only: Optional[Sequence[str]] = None,
         cores: Optional[int] = None) -> List[Tuple[str, dict]]:
    """List (benchmark name, params) pairs of `suite` on `devices`, in registry order.

    With `cores` (the allowed core count of the host), benchmarks with a `scale` get
    sizes for that many cores; None or <= BASE_CORES: the registered sizes.

    Raises:
        ValueError: unknown suite, a name in `only` that is not registered, or nothing
            planned (`only` names no benchmark of `suite` on `devices`).
    """
    if suite not in SUITES:
        raise ValueError("unknown suite %r (choose from %s)" % (suite, ", ".join(SUITES)))
    registry = load_suites()
    if "" in set(only or ()):
        raise ValueError("an empty benchmark name: `--help` lists the %d known under --only"
                         % len(registry))
    unknown = sorted(set(only or ()) - set(registry))
    if unknown:
        raise ValueError("unknown benchmark(s): %s.%s `--help` lists the %d known under "
                         "--only" % (", ".join(unknown), _suggest(unknown, registry),
                                     len(registry)))
    planned = [(b.name, b.scale(dict(p), cores) if b.scale and cores else dict(p))
               for b in registry.values()
               if b.device in devices and (not only or b.name in only)
               for p in b.params_for(suite)]
    if not planned:
        where = ["%s (%s suite, %s)" % (name, registry[name].suites, registry[name].device)
                 for name in (only or ())]
        raise ValueError("nothing to measure: no benchmark of the %s suite on %s%s"
                         % (suite, "/".join(devices),
                            " matches --only; runs in: " + ", ".join(where) if where else ""))
    return planned
