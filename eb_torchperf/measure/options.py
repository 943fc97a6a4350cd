"""How long and how often an audit measures: RunnerOptions and the suites' defaults.

Kept apart from measure.interleave (which runs the audit) so that request validation
and the shells read the options without the runner.
"""

import dataclasses
import os
from typing import Optional

from eb_torchperf.measure.runner import DEFAULT_START_TIMEOUT_S


@dataclasses.dataclass(frozen=True)
class RunnerOptions:
    """How long and how often to measure.

    Attributes:
        pairs: fresh worker pairs (processes) the suite is repeated over.
        block_s: timed seconds per block (one side, one round).
        warmup_s: untimed seconds before each block.
        settle_s: pause after each block, for the other side's spinning threads to sleep.
        min_rounds, max_rounds: rounds per benchmark and pair.
        bench_budget_s: rounds stop once a benchmark has used this long in one pair
            (both sides, after min_rounds): a slow build cannot make the suite slow.
        min_sample_s: calibration target for one sample.
        request_timeout_s: a worker silent this long is taken as hung and killed.
        start_timeout_s: deadline for `import torch` in a worker.
        allow_same_torch: an A/A run: both sides may load one torch installation
            (otherwise the audit stops with ConfigError before measuring).
        keep_reference_env: the reference keeps the target's Python path settings
            (PYTHONPATH, EBPYTHONPREFIXES, ...; see isolation.isolating_overrides).
        max_pairs: with a reference, after `pairs` pairs the rows whose 95 % interval
            is wider than ±target_half_width (and does not exclude the A/A floor band)
            get more fresh pairs, up to max_pairs in all (max_pairs == pairs: none).
        row_budget_s: wall seconds per measured row for the whole audit (the budget is
            the sum over the rows measured; rows no side can run add nothing:
            extra_pairs.audit_budget_s); no extra pair is started past it, and an
            extra pair takes only the widest rows whose measured cost fits.  None:
            no extra pairs.
        gpu_row_budget_s: the same for a GPU row (None: row_budget_s); a GPU host's
            fresh worker also starts CUDA, and its zygote takes longer to start.
        min_audit_budget_s: the extra-pair budget of an audit of few rows is at least
            this (seconds), so a one-row `--only` audit can still narrow its row.
        target_half_width: the stated precision target, ±5 % (the same as
            analysis.precision.ADAPTIVE_HALF_WIDTH; a test holds them equal).
        rotate_cpus: one-thread rows (registry.Benchmark.single_threaded) run with both
            sides' calling thread on the same CPU in a round, the next CPU in the next
            round (probe.worker.calling_thread_on); False leaves placement to the OS.
        fork: the workers of each pair are forked from one zygote per side
            (measure.zygote; ~7 ms instead of a ~5 s torch import on the H200 host),
            where the zygote proves fork safe; else (or False) spawned as before.
        zygote_pairs: pairs forked from one zygote before a fresh zygote replaces it
            (what is fixed at import, such as library load addresses, is then sampled
            too: docs/measurement.md).  8: a new zygote costs a torch import (4.7-6.7 s on
            the H200 host, 2.4 s on the 2-core VM) and, over 129 H200 and 158 VM A/A
            rows, pairs 0-3 and 4-7 (other zygotes) differed no more than random
            halves of the same pairs (issue 26); at 4, the H200's A/A read 3, 2 and
            6 of 24 rows inconclusive, at 8 on the same machine 0, 0 and 0.
        stall_retries: a block that ran at STALL_FACTOR x its worker's best block of the
            row or slower is measured again, up to this many times
            (probe.timing.stalled; the count is kept as BenchResult.contention
            "stalled"); 0: never.
        spread_threads: the threads that run a multi-threaded CPU row's block are bound
            one per allowed CPU for the block, alike on both sides (probe.placement).
        wait_idle_s: before the first pair, wait up to this long for the allowed CPUs
            to be idle (measure.contention.wait_idle); None: measure at once.
    """

    pairs: int = 2
    block_s: float = 0.04
    warmup_s: float = 0.02
    settle_s: float = 0.01
    min_rounds: int = 3
    max_rounds: int = 12
    bench_budget_s: float = 1.2
    min_sample_s: float = 0.002
    request_timeout_s: float = 300.0
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    allow_same_torch: bool = False
    keep_reference_env: bool = False
    max_pairs: Optional[int] = None
    row_budget_s: Optional[float] = None
    gpu_row_budget_s: Optional[float] = None
    min_audit_budget_s: float = 0.0
    target_half_width: float = 0.05
    rotate_cpus: bool = True
    fork: bool = True
    zygote_pairs: int = 8
    stall_retries: int = 2
    spread_threads: bool = True
    wait_idle_s: Optional[float] = None

    def row_budget_for(self, device: str) -> Optional[float]:
        """Seconds of the audit's budget a measured row of `device` adds (row_budget_s,
        gpu_row_budget_s for "cuda" where set)."""
        if device == "cuda" and self.gpu_row_budget_s is not None:
            return self.gpu_row_budget_s
        return self.row_budget_s

    def __post_init__(self):
        if self.zygote_pairs < 1:
            raise ValueError("zygote_pairs must be >= 1 (zygote_pairs=%d)" % self.zygote_pairs)
        if self.stall_retries < 0:
            raise ValueError("stall_retries must be >= 0 (stall_retries=%d)" % self.stall_retries)
        if self.pairs < 1 or self.min_rounds < 1 or self.max_rounds < self.min_rounds:
            raise ValueError("pairs and min_rounds must be >= 1, max_rounds >= min_rounds "
                             "(pairs=%d, min_rounds=%d, max_rounds=%d)"
                             % (self.pairs, self.min_rounds, self.max_rounds))
        if self.max_pairs is not None and self.max_pairs < self.pairs:
            raise ValueError("max_pairs must be >= pairs (max_pairs=%d, pairs=%d)"
                             % (self.max_pairs, self.pairs))
        if min(self.block_s, self.bench_budget_s, self.request_timeout_s) <= 0:
            raise ValueError("block_s, bench_budget_s and request_timeout_s must be > 0")


#: Defaults per suite; `full` trades time for tighter intervals (issue fact: three
#: fresh pairs at 80 s stayed within 3.3 % A/A in 6 of 6 runs).  Since issue 16 the
#: wide rows get extra fresh pairs within the time budget.  Quick: 16 CPU rows on the
#: 2-core VM x 4.0 s = 64 s at most, and the CLI's start and report add 3-4 s (bound:
#: 70 s; at 4.2 s three idle A/A audits took 68.3-70.2 s, 2026-12-04); the H200 host's
#: 8 GPU rows add 5.5 s each (bound: 120 s; at 4.0 s per row its 3 A/A audits took
#: 90-92 s and read 6, 1 and 1 of 24 rows inconclusive), blocks of
#: 15 ms with 10 ms warm-up and 5 ms settle (5 A/A runs at 40/20/10 ms: median interval
#: half-width 12.1 %; at 15/10/5 ms with the allocator and CPU-rotation fixes 4-5 %,
#: reports/examples/aa-table-2core-vm.md); the layer rows of suite_cpu_layers run in
#: `full`.  Five rounds at least in quick and full, an odd number so that a pair's
#: location (its median round) is one round: on the 16-core H200 host one fresh
#: reference worker ran its first two softmax blocks at 8.0 and 5.3 ms against 0.33 ms,
#: and the median of that pair's 4 rounds read 409 % (issue 16, quick --device all A/A).
#: Seconds an audit of few rows may still spend on extra pairs (the suites'
#: min_audit_budget_s): a one-row `--only` audit had 4.2 s (the row budget then), which
#: its first 3 pairs used up (conv3x3 under DNNL_MAX_CPU_ISA=SSE41 stayed inconclusive
#: at 31-111 %, then read 52 % [significant] with 6 pairs).
MIN_AUDIT_BUDGET_S = 20.0
SUITE_OPTIONS = {
    "quick": RunnerOptions(pairs=3, block_s=0.015, warmup_s=0.01, settle_s=0.005,
                           min_rounds=3, bench_budget_s=0.12, max_pairs=24,
                           row_budget_s=4.0, gpu_row_budget_s=5.5,
                           min_audit_budget_s=MIN_AUDIT_BUDGET_S),
    "full": RunnerOptions(pairs=3, block_s=0.06, min_rounds=5, max_rounds=20, bench_budget_s=2.0,
                          max_pairs=10, row_budget_s=18.0,
                          min_audit_budget_s=MIN_AUDIT_BUDGET_S),
    # Whole models (probe/suite_models): one round at least, each row's own 4 s budget;
    # extra pairs within 20 s per model row for the whole audit: the wheel against itself
    # on the 2-core VM went from 9 of 14 rows inconclusive (3 pairs, 196 s) to 1 (278 s),
    # while Debian's torch 1.13 (276 s for its 3 pairs, every row clear of the A/A band)
    # gets none and stays under 5 minutes (issue 17).
    "models": RunnerOptions(pairs=3, block_s=0.1, min_rounds=1, max_rounds=8, max_pairs=8,
                            row_budget_s=20.0, min_audit_budget_s=MIN_AUDIT_BUDGET_S),
}


def allowed_cores() -> int:
    """CPUs this process may run on (the workers inherit it): the `threads: all` count."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


#: Hosts with at most this many allowed CPUs are "small": there both sides prepare a
#: CPU row at once.
#: On the 2-core VM preparing at once halved the time spent preparing (33 s of a 65 s
#: quick A/A went to preparing in turn) for 101-113 row-pairs instead of 88, with no
#: stalled blocks.  On the 16-core H200 host, idle (2026-12-03, docs/measurement.md),
#: all-core blocks stalled (every call at ~8 ms, two scheduler ticks): 28 % and 51 % of
#: the first round's blocks (first and second side) and 12-18 % of the second round's
#: with both sides prepared at once; 12 %, 7 % and 4 % of rounds 1-3 prepared in turn;
#: 1-4 % prepared in turn with the block's threads spread one per CPU
#: (probe.placement, on every host).
SMALL_HOST_CORES = 4


def small_host(cores: Optional[int] = None) -> bool:
    """True for at most SMALL_HOST_CORES allowed CPUs (`cores`, default allowed_cores)."""
    return (allowed_cores() if cores is None else cores) <= SMALL_HOST_CORES


def prepare_together(device: str, pairs: int, cores: Optional[int] = None) -> bool:
    """Whether both sides prepare a row at once: CPU rows of audits of 2+ pairs on small
    hosts (small_host).  In turn otherwise: on many cores both pools at once put twice
    the CPUs' threads on the CPUs and the next blocks stall; GPU rows (an A/A conv_cuda
    row prepared at once on one GPU read 66 %); one-pair audits (no mirrored pair evens
    out the first block: CI's one-pair A/A install test read 84 %)."""
    return device == "cpu" and pairs > 1 and small_host(cores)
