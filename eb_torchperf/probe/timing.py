"""Time a callable in blocks: calibration, untimed warm-up, per-call samples.

Pure stdlib; the clock and the device synchronisation are injected so tests can use
a fake timer (the torch.utils.benchmark `_timer_cls` idea).
"""

import statistics
import time
from typing import Callable, List, Optional, Tuple

#: Floor on a measured interval, "to prevent divide by zero" (torch Timer does the same).
MIN_INTERVAL_S = 1e-9
#: Calls longer than this skip the warm-up: the slow-after-idle effect measured on the
#: 2-core dev machine lasts 5-20 ms, < 10 % of such a call.
WARMUP_SKIP_CALL_S = 0.2
#: A first call at least this long (and at least min_sample_s) ends calibration at one
#: call per sample: a whole model at 1 % of the wheel takes tens of seconds per call,
#: and a second calibration call would double its preparation (the micro-suite's calls
#: stay under ~0.5 s on the slowest build, so it is not affected).
SLOW_FIRST_CALL_S = 0.5
#: Upper bound on calls per sample, so calibration of a no-op terminates.
MAX_NUMBER = 1 << 20


def time_calls(fn: Callable[[], object], number: int,
               timer: Callable[[], float] = time.perf_counter,
               sync: Optional[Callable[[], None]] = None) -> float:
    """Run `fn` `number` times and return the elapsed seconds (>= MIN_INTERVAL_S).

    `sync` (e.g. torch.cuda.synchronize) is called before starting and before stopping
    the clock, so asynchronous device work is inside the interval.
    """
    if sync is not None:
        sync()
    start = timer()
    for _ in range(number):
        fn()
    if sync is not None:
        sync()
    return max(timer() - start, MIN_INTERVAL_S)


def calibrate(fn: Callable[[], object], min_sample_s: float,
              timer: Callable[[], float] = time.perf_counter,
              sync: Optional[Callable[[], None]] = None,
              first_may_be_setup: bool = False) -> Tuple[int, float]:
    """Find how many calls make one sample of at least `min_sample_s` seconds.

    The first call (which may compile or allocate) is made and discarded; when it took
    at least max(min_sample_s, SLOW_FIRST_CALL_S), calibration ends there (one call per
    sample, its time the estimate) unless `first_may_be_setup`: then calibration goes
    on from the second call.  A micro row's first call can carry a process's one-time
    set-up: on the H200 host the first backward of bert_layer_train (autograd starting
    its CUDA device threads) took 0.22-0.6 s, the next 23 ms; taken as the estimate,
    it skipped the warm-up (WARMUP_SKIP_CALL_S) of every block of the row.

    Returns:
        (number, seconds per call estimated from the last calibration round).
    """
    first = time_calls(fn, 1, timer, sync)
    if first >= max(min_sample_s, SLOW_FIRST_CALL_S) and not first_may_be_setup:
        return 1, first
    number = 1
    while True:
        elapsed = time_calls(fn, number, timer, sync)
        if elapsed >= min_sample_s or number >= MAX_NUMBER:
            return number, elapsed / number
        grow = int(number * min_sample_s / elapsed * 1.2) + 1
        number = min(MAX_NUMBER, max(number * 2, grow))


def warm_up(fn: Callable[[], object], warmup_s: float, per_call_s: float,
            timer: Callable[[], float] = time.perf_counter,
            sync: Optional[Callable[[], None]] = None) -> int:
    """Untimed calls for `warmup_s` seconds before a block; returns the calls made.

    A process that has been idle runs slowly for its next 5-20 ms (measured on the dev
    machine: matmul 1024 took 7 ms back-to-back, 24 ms after a 400 ms gap), so the side
    that waited while the other measured must warm up before its timed block.

    With `sync` (device work) the calls are counted, not timed: asynchronous calls
    return at once, so a clock-bounded loop queued calls up to the launch queue's depth
    and the final sync then waited for all of them (on the H200 a bf16 8192^3 GEMM got
    only 3 rounds in its 1.2 s budget, a quick GPU audit took 55 s).  The count is
    warmup_s / per_call_s, where per_call_s came from synchronised calibration.
    """
    if warmup_s <= 0 or per_call_s >= WARMUP_SKIP_CALL_S:
        return 0
    if sync is not None:
        calls = max(1, int(warmup_s / max(per_call_s, MIN_INTERVAL_S)))
        for _ in range(calls):
            fn()
        sync()
        return calls
    calls = 0
    start = timer()
    while timer() - start < warmup_s:
        fn()
        calls += 1
    return calls


def measure_block(fn: Callable[[], object], number: int, block_s: float,
                  min_samples: int = 1,
                  timer: Callable[[], float] = time.perf_counter,
                  sync: Optional[Callable[[], None]] = None,
                  after_sample: Optional[Callable[[], None]] = None) -> List[float]:
    """Take samples of `number` calls until `block_s` seconds have passed.

    `after_sample` (e.g. a benchmark's extra CPU/GPU measurement) runs after each
    sample, outside its timed interval but inside the block's time.

    Returns:
        one float per sample: seconds per call (elapsed / number); at least
        `min_samples` samples, however long they take.
    """
    samples: List[float] = []
    start = timer()
    while len(samples) < min_samples or timer() - start < block_s:
        samples.append(time_calls(fn, number, timer, sync) / number)
        if after_sample is not None:
            after_sample()
    return samples


#: A block whose median call took at least this many times the process's best block of
#: the same benchmark is measured again (probe.worker): on the 16-core H200 host,
#: idle, 9-18 % of all-core blocks ran every call at a near-fixed 8 ms (two 4 ms
#: scheduler ticks; matmul 1024^2 1.8 ms, LayerNorm 0.3 ms otherwise) and such blocks
#: decided whole pairs (an A/A embedding_bag pair read 4130 %, docs/measurement.md).
#: 2.5: one-thread rows moved between the 2-core VM's vCPUs differ by up to 1.9x.
STALL_FACTOR = 2.5


def stalled(samples: List[float], best_s: Optional[float]) -> bool:
    """True when the median of a block's `samples` (seconds per call) is at least
    STALL_FACTOR x `best_s`, the process's best block so far; never for calls of
    WARMUP_SKIP_CALL_S or longer (a whole model: one more block costs seconds) or
    without a best."""
    if not samples or best_s is None or best_s >= WARMUP_SKIP_CALL_S:
        return False
    return statistics.median(samples) >= STALL_FACTOR * best_s
