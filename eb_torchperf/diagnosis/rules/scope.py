"""Which benchmark families a rule's findings can explain, as data on the rule.

A rule function carries `affects`: a frozenset of (device, family) pairs taken from
the benchmark registry (probe.registry: `Benchmark.device`, `Benchmark.family`),
never a list of benchmark names.  `diagnose` copies it onto each finding the rule
returns (`Finding.affects`, "cpu/gemm" strings), and the final `unexplained-slowdown`
step (rules.unexplained) calls a significantly slower row explained only when a
warning or error finding names the row's family.
"""

from typing import Callable, FrozenSet, Iterable, Optional, Tuple

from eb_torchperf.probe import registry

Scope = FrozenSet[Tuple[str, str]]


def families(device: Optional[str] = None, only: Iterable[str] = (),
             exclude: Iterable[str] = ()) -> Scope:
    """(device, family) pairs of the registry.

    Args:
        device: "cpu" or "cuda"; None for both.
        only: keep only these family names (empty: all).
        exclude: drop these family names.
    """
    only, exclude = set(only), set(exclude)
    return frozenset((b.device, b.family) for b in registry.load_suites().values()
                     if (device is None or b.device == device)
                     and (not only or b.family in only) and b.family not in exclude)


def affects(*scopes: Scope) -> Callable[[Callable], Callable]:
    """Decorator: the rule's findings can explain rows of the union of `scopes`."""
    union = frozenset().union(*scopes)

    def mark(rule: Callable) -> Callable:
        rule.affects = union
        return rule
    return mark


def scope_names(scope: Iterable[Tuple[str, str]]) -> Tuple[str, ...]:
    """("cpu/gemm", ...) sorted, the form stored on findings and in JSON."""
    return tuple(sorted("%s/%s" % pair for pair in scope))


def row_scope(bench: str) -> Optional[str]:
    """"device/family" of a registered benchmark name, None when unknown."""
    bench_obj = registry.load_suites().get(bench)
    return "%s/%s" % (bench_obj.device, bench_obj.family) if bench_obj else None


#: Families whose time is mostly BLAS GEMM (thread_scaling is a GEMM too).
CPU_GEMM = ("gemm", "transformer", "threads")
#: The probe's own measurement of the first CUDA call (gpu facts `first_call_s`):
#: context creation and module loading, not a registry benchmark.
CUDA_STARTUP = frozenset({("cuda", "startup")})
