"""Clocks for the profiler: how launches on one device are timed, and how its caches are made cold.

An execution backend hands the profiler a `DeviceTimer` (`ExecutionBackend.timer`). The profiler's loop
is the same for every device:

    timer.flush_cache()      # cold caches for the next launch (not timed)
    start = timer.mark()
    fn()
    end = timer.mark()
    ...
    timer.synchronize()      # every mark is final from here
    timer.elapsed_ms(start, end)

The default is the host's wall clock: each mark first waits for the device, so work that a launch left
running is counted whole, and a flush that runs on the device is finished before the clock starts. A
backend with device-side clocks (events recorded on a stream) subclasses `DeviceTimer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 * 1024 * 1024
"""What a cache flush writes: more than any GPU's L2 (as TileLang's and Triton's `do_bench` do)."""


def _nothing() -> None:
    return None


class DeviceTimer:
    """Wall-clock timing of launches: `mark()` waits for the device, then reads `time.perf_counter`.

    `synchronize` waits for the device (nothing for launches that return when done); `flush` makes the
    device's caches cold (nothing on a host, whose caches are not flushed between repetitions).
    """

    description = "wall clock"

    def __init__(
        self, synchronize: Callable[[], None] | None = None, flush: Callable[[], None] | None = None
    ):
        self._synchronize = synchronize or _nothing
        self._flush = flush or _nothing

    def synchronize(self) -> None:
        """Wait until every launch made so far has finished."""
        self._synchronize()

    def flush_cache(self) -> None:
        """Leave the device's caches cold for the next launch."""
        self._flush()

    def mark(self) -> Any:
        """A point in time, taken after the work launched so far."""
        self._synchronize()
        return time.perf_counter()

    def elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two marks (call after `synchronize`)."""
        return (end - start) * 1e3


class KernelClockUnavailable(RuntimeError):
    """A device offers no record of its kernels' own run times (the message says what to use instead)."""


class KernelClock:
    """Device time of the kernels a function launches, read from the device's records of each kernel's
    start and end (CUPTI activity records on NVIDIA GPUs): the host's launch overhead, and the gaps
    between launches, are not counted. This is what TileLang's `do_bench(backend="cupti")` measures,
    and the fair figure for kernels of a few microseconds.

    `time_calls(fn, count)` runs `fn` `count` times, each after a cache flush that is not counted, and
    returns, per call, the summed duration in milliseconds of the kernels that call launched.
    """

    description = "kernel time"

    def time_calls(self, fn: Callable[[], Any], count: int) -> list[float]:
        raise NotImplementedError
