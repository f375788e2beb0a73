"""`tilecraft.profiler.do_bench`: call counts, where caches are flushed, aggregation and its errors.

Durations come from a fake device timer whose clock advances only inside the benchmarked function, so
every expected number is exact and nothing depends on how loaded the machine is.
"""

from __future__ import annotations

import time

import pytest

from tilecraft.errors import ArgumentError
from tilecraft.execution.cuda_driver.kernel_clock import DeviceSpan, split_by_flushes
from tilecraft.profiler import BenchTimeout, device_timer, do_bench
from tilecraft.profiler.bench import MAX_PROFILED_CALLS
from tilecraft.runtime.timing import DeviceTimer, KernelClock, KernelClockUnavailable


class FakeClock(DeviceTimer):
    """A device whose clock advances by the next of `durations` (ms) at each call of `fn`; it logs what
    happens in order."""

    def __init__(self, durations):
        super().__init__()
        self.durations = list(durations)
        self.now = 0.0
        self.log = []

    def fn(self):
        self.log.append("call")
        self.now += self.durations.pop(0) if self.durations else 1.0

    def flush_cache(self):
        self.log.append("flush")

    def mark(self):
        self.log.append("mark")
        return self.now

    def elapsed_ms(self, start, end):
        return end - start


def test_explicit_counts_call_the_function_exactly_that_often():
    clock = FakeClock([])
    do_bench(clock.fn, _n_warmup=3, _n_repeat=7, timer=clock)
    # one first call (compiles, allocates), 3 warm-up calls, 7 timed calls; no estimate is needed
    assert clock.log.count("call") == 1 + 3 + 7


def test_every_timed_call_starts_after_a_flush_and_between_two_marks():
    clock = FakeClock([])
    do_bench(clock.fn, _n_warmup=1, _n_repeat=4, timer=clock)
    timed = clock.log[clock.log.index("flush") :]
    assert timed == ["flush", "mark", "call", "mark"] * 4


def test_the_result_is_the_median_of_the_timed_calls_by_default():
    # the first call 100 ms, one warm-up call, then 5 timed calls: the median is 3 whatever the outliers
    clock = FakeClock([100, 0, 1, 3, 50, 2, 4])
    assert do_bench(clock.fn, _n_warmup=1, _n_repeat=5, timer=clock) == 3.0


@pytest.mark.parametrize(("mode", "expected"), [("min", 1.0), ("max", 50.0), ("mean", 12.0), ("median", 3.0)])
def test_return_mode(mode, expected):
    clock = FakeClock([100, 0, 1, 3, 50, 2, 4])
    assert do_bench(clock.fn, _n_warmup=1, _n_repeat=5, timer=clock, return_mode=mode) == expected


def test_quantiles():
    clock = FakeClock([0, 0, 1, 2, 3, 4, 5])
    result = do_bench(clock.fn, _n_warmup=1, _n_repeat=5, timer=clock, quantiles=[0.0, 0.5, 1.0])
    assert result == [1.0, 3.0, 5.0]


def test_time_budgets_become_call_counts_from_the_estimate():
    # every call takes 2 ms: 10 ms of warm-up is 5 calls, 20 ms of timed calls is 10
    clock = FakeClock([2.0] * 100)
    do_bench(clock.fn, warmup=10, rep=20, timer=clock)
    assert clock.log.count("call") == 1 + 5 + 5 + 10


def test_early_stop_returns_the_estimate_without_the_full_run():
    clock = FakeClock([5.0] * 100)
    assert do_bench(clock.fn, timer=clock, early_stop_baseline=1.0) == 5.0
    assert clock.log.count("call") == 1 + 5


def test_a_timeout_stops_the_benchmark_between_calls():
    with pytest.raises(BenchTimeout, match="time limit"):
        do_bench(lambda: time.sleep(0.02), _n_warmup=1, _n_repeat=1000, timer=DeviceTimer(), timeout=0.2)


@pytest.mark.parametrize(
    ("option", "words"),
    [
        (dict(return_mode="average"), "return_mode"),
        (dict(backend="nsight"), "backend"),
        (dict(quantiles=[1.5]), "quantiles"),
        (dict(device=1), "target="),
    ],
)
def test_bad_options_are_argument_errors_naming_them(option, words):
    with pytest.raises(ArgumentError, match=words):
        do_bench(lambda: None, timer=DeviceTimer(), **option)


def test_cudagraph_warns_and_times_with_the_device_timer():
    clock = FakeClock([])
    with pytest.warns(RuntimeWarning, match="device's timer"):
        do_bench(clock.fn, _n_warmup=1, _n_repeat=2, timer=clock, backend="cudagraph")


class FakeKernelClock(KernelClock):
    """Kernel records that count only what `fn` reports as kernel time, never its host time."""

    def __init__(self):
        self.kernel_ms = []
        self.batches = []

    def time_calls(self, fn, count):
        self.batches.append(count)
        times = []
        for _ in range(count):
            self.kernel_ms.clear()
            fn()
            times.append(sum(self.kernel_ms))
        return times


def test_cupti_counts_the_kernels_time_and_not_the_host_time():
    """A call that spends 20 ms on the host around a 0.5 ms kernel measures 0.5 ms."""
    clock = FakeKernelClock()

    def call():
        time.sleep(0.02)
        clock.kernel_ms.append(0.5)

    assert do_bench(call, _n_warmup=1, _n_repeat=3, kernel_clock=clock, backend="cupti") == 0.5
    assert clock.batches == [3]


def test_cupti_turns_budgets_into_counts_and_caps_the_profiled_calls():
    clock = FakeKernelClock()
    fn = lambda: clock.kernel_ms.append(1e-3)  # noqa: E731 - 1 us kernels: 100 ms would be 100,000 calls
    do_bench(fn, warmup=1, rep=100, kernel_clock=clock, backend="cupti")
    assert clock.batches == [5, MAX_PROFILED_CALLS]


def test_cupti_on_a_device_without_kernel_records_names_the_event_backend():
    with pytest.raises(ArgumentError, match="backend='event'"):
        do_bench(lambda: None, backend="cupti", target="c")


def test_split_by_flushes_assigns_each_kernel_to_the_call_after_its_flush():
    flushes = [DeviceSpan(0, 10), DeviceSpan(20, 30), DeviceSpan(50, 60)]
    kernels = [
        DeviceSpan(2, 8),  # the flush's own kernel
        DeviceSpan(11, 13), DeviceSpan(14, 15),  # call 0: two kernels, 3 us
        DeviceSpan(21, 29),  # flush
        DeviceSpan(31, 41),  # call 1: 10 us
        DeviceSpan(52, 58),  # flush; call 2 launched nothing
    ]  # fmt: skip
    assert split_by_flushes(kernels, flushes, 3) == pytest.approx([3e-3, 10e-3, 0.0])


def test_split_by_flushes_refuses_when_a_flush_range_is_missing():
    with pytest.raises(KernelClockUnavailable, match="cannot be assigned"):
        split_by_flushes([DeviceSpan(11, 13)], [DeviceSpan(0, 10)], 2)


def test_the_wall_clock_measures_real_time():
    # a lower bound only: a loaded machine can make a call slower, never faster than its sleep
    assert do_bench(lambda: time.sleep(0.002), _n_warmup=1, _n_repeat=3, timer=DeviceTimer()) >= 2.0


def test_module_level_do_bench_times_on_the_auto_targets_device():
    timer = device_timer("c")
    assert type(timer) is DeviceTimer  # the host: wall clock, launches return when done
    assert do_bench(lambda: time.sleep(0.001), _n_warmup=1, _n_repeat=2, target="c") >= 1.0
