"""DispatchTimer against a fake CUDA stream: host time, device time, spin growth."""

from eb_torchperf.probe.cuda_timing import (EXTRA_CALLS, FIRST_SPIN_CYCLES, MAX_SPIN_CYCLES,
                                            DispatchTimer)


class FakeCuda:
    """A stream on a fake device clock: the spin kernel runs `cycles / hz` seconds from
    the last synchronize; each call adds `gpu_s` of device work and `cpu_s` of host time."""

    def __init__(self, clock, cpu_s, gpu_s, hz=1e9):
        self.clock, self.cpu_s, self.gpu_s, self.hz = clock, cpu_s, gpu_s, hz
        self.spin_end = 0.0
        self.device_busy_until = 0.0
        self.sleeps = []
        test = self

        class Event:
            def __init__(self, enable_timing=False):
                self.at = None

            def record(self):
                self.at = max(test.device_busy_until, test.clock.now)
                test.device_busy_until = self.at

            def query(self):
                return test.clock.now >= self.at

            def synchronize(self):
                test.clock.now = max(test.clock.now, self.at)

            def elapsed_time(self, other):
                return (other.at - self.at) * 1e3
        self.Event = Event

    def synchronize(self):
        self.clock.now = max(self.clock.now, self.device_busy_until)

    def _sleep(self, cycles):
        self.sleeps.append(cycles)
        self.device_busy_until = max(self.device_busy_until, self.clock.now) + cycles / self.hz

    def launch(self):
        self.clock.now += self.cpu_s
        self.device_busy_until = max(self.device_busy_until, self.clock.now) + self.gpu_s


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeTorch:
    def __init__(self, cuda):
        self.cuda = cuda


def _timer(cpu_s, gpu_s):
    clock = FakeClock()
    cuda = FakeCuda(clock, cpu_s, gpu_s)
    return DispatchTimer(FakeTorch(cuda), cuda.launch, clock=clock), cuda


def test_gpu_bound_call_reports_host_and_device_time_apart():
    # the published H100 case: 13.5 us CPU, 100 us GPU per Linear call
    timer, cuda = _timer(13.5e-6, 100e-6)
    extra = timer.extra()
    assert abs(extra["cpu_s"] - 13.5e-6) < 1e-12
    assert abs(extra["gpu_s"] - 100e-6) < 1e-12
    assert cuda.sleeps == [FIRST_SPIN_CYCLES]


def test_cpu_bound_call_grows_the_spin_until_it_covers_the_issue():
    # 32 calls x 100 us = 3.2 ms of issue: 2 ms spin too short, 8 ms enough
    timer, cuda = _timer(100e-6, 5e-6)
    extra = timer.extra()
    assert cuda.sleeps == [FIRST_SPIN_CYCLES, 4 * FIRST_SPIN_CYCLES]
    assert abs(extra["cpu_s"] - 100e-6) < 1e-12
    assert abs(extra["gpu_s"] - 5e-6) < 1e-12   # back to back, no host gaps
    timer.extra()
    assert cuda.sleeps[-1] == 4 * FIRST_SPIN_CYCLES   # the grown spin is kept


def test_host_that_waits_stops_growing_the_spin():
    clock = FakeClock()
    cuda = FakeCuda(clock, 10e-6, 50e-6)

    def blocking_call():  # CUDA_LAUNCH_BLOCKING=1: the host waits for every kernel
        cuda.launch()
        cuda.synchronize()
    timer = DispatchTimer(FakeTorch(cuda), blocking_call, clock=clock)
    timer.extra()
    assert cuda.sleeps[-1] == MAX_SPIN_CYCLES and timer.host_waits
    count = len(cuda.sleeps)
    extra = timer.extra()
    assert cuda.sleeps[count:] == [FIRST_SPIN_CYCLES]
    assert extra["cpu_s"] >= 50e-6   # the wait is in the host's time
    assert EXTRA_CALLS == 32
