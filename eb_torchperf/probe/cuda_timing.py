"""CPU and GPU time per call of CUDA work: how long the host takes to issue one call,
and how long the device takes to run it.

The method: a spin kernel (`torch.cuda._sleep`, which PyTorch's own CUDA tests use
to keep a stream busy) holds the stream while the host issues
`calls` calls, so the host's issue time (wall clock around the loop) contains no
waiting on the device, and the device then runs the queued calls back to back
between two CUDA events, so the device time contains no gaps where it waited on the
host.  If the spin ended before the host finished issuing (its start event had
completed), the measurement is repeated with a longer spin.

Published case this measures (https://github.com/NVIDIA/TransformerEngine/issues/2053):
`nn.Linear` bf16, hidden 2048, 8192 tokens: 13.5 µs CPU vs 100 µs GPU per call on
an H100 DGX host, 33-37 µs CPU on Grace hosts (GH200/GB200).
"""

import time

#: Calls issued behind one spin: enough to average event resolution (~0.5 µs) away,
#: few enough to stay far below the CUDA launch queue depth (~1000 launches).
EXTRA_CALLS = 32
#: First spin length, in GPU clock cycles (~1 ms at the H200's 1.98 GHz boost clock).
FIRST_SPIN_CYCLES = 2_000_000
#: Longest spin (~25 ms at 1.98 GHz): with CUDA_LAUNCH_BLOCKING=1 or a cudaFree in
#: every call the host waits for the device whatever the spin, so growing it is useless.
MAX_SPIN_CYCLES = 50_000_000
#: Floor on a measured interval, as in timing.MIN_INTERVAL_S.
MIN_INTERVAL_S = 1e-9


class DispatchTimer:
    """A zero-argument CUDA callable that can also report CPU and GPU time per call.

    `__call__` runs the wrapped callable once (what the worker times as wall time);
    `extra()` is called by the worker after each sample and returns
    {"cpu_s": host seconds per call, "gpu_s": device seconds per call}.

    Args:
        torch: the imported torch module (CUDA available).
        fn: zero-argument callable that issues CUDA work on the current stream.
        calls: calls per extra() measurement.
        clock: wall clock (seconds), injectable for tests.
    """

    def __init__(self, torch, fn, calls=EXTRA_CALLS, clock=time.perf_counter):
        self.torch, self.fn, self.calls, self.clock = torch, fn, calls, clock
        self.spin_cycles = FIRST_SPIN_CYCLES
        #: True once even MAX_SPIN_CYCLES did not cover the issue: the host waits for
        #: the device inside the calls, so longer spins would only waste time.
        self.host_waits = False

    def __call__(self):
        return self.fn()

    def _issue_behind_spin(self, start, end):
        """One measurement; returns (host seconds, whether the spin covered the issue)."""
        self.torch.cuda.synchronize()
        self.torch.cuda._sleep(self.spin_cycles)
        start.record()
        begin = self.clock()
        for _ in range(self.calls):
            self.fn()
        host_s = self.clock() - begin
        covered = not start.query()
        end.record()
        end.synchronize()
        return host_s, covered

    def extra(self):
        """Measure `calls` calls behind a spin kernel: CPU and GPU seconds per call.

        Where the host waits for the device inside the calls (CUDA_LAUNCH_BLOCKING=1,
        a synchronising cudaFree), no spin covers the issue; then "gpu_s" includes the
        device's idle gaps and "cpu_s" the waiting, which is what that setting costs.
        """
        cuda = self.torch.cuda
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        host_s, covered = self._issue_behind_spin(start, end)
        while not covered and not self.host_waits:
            if self.spin_cycles >= MAX_SPIN_CYCLES:
                self.host_waits, self.spin_cycles = True, FIRST_SPIN_CYCLES
                break
            self.spin_cycles = min(4 * self.spin_cycles, MAX_SPIN_CYCLES)
            host_s, covered = self._issue_behind_spin(start, end)
        device_s = start.elapsed_time(end) * 1e-3
        return {"cpu_s": max(host_s / self.calls, MIN_INTERVAL_S),
                "gpu_s": max(device_s / self.calls, MIN_INTERVAL_S)}
