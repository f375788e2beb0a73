"""`do_bench`: how long a function takes on a device, in milliseconds (TileLang's and Triton's method).

One call warms up (compiles, allocates); five timed calls estimate the cost; `warmup` and `rep` are time
budgets in milliseconds that become call counts from that estimate (`_n_warmup` / `_n_repeat` give the
counts directly). Every timed call starts with cold device caches: the timer flushes them (a 256 MiB
write on GPUs, outside the timed region). The device's timer comes from the execution backend: events on
GPUs, the wall clock on the host. The result is the median by default (robust to the odd slow run on a
shared machine); `return_mode` or `quantiles` ask for others.

`backend="cupti"` times the same calls on the device's own record of each kernel's run (CUPTI on NVIDIA
GPUs, through the execution backend's `kernel_clock`): only the kernels' time counts, not the launch,
which is the fair figure for kernels of a few microseconds and what TileLang's cupti backend reports. A
device without such records is an error that names `backend="event"`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.runtime.timing import FLUSH_BYTES, DeviceTimer, KernelClock, KernelClockUnavailable

RETURN_MODES = ("min", "max", "mean", "median")
BACKENDS = ("event", "cupti", "cudagraph")
_ESTIMATE_RUNS = 5
_MIN_ESTIMATE_MS = 1e-4  # a clock too coarse to see a call must not turn a budget into a division by 0
# Profiled calls are held in memory until the profile ends: a 3 us kernel and a 100 ms budget would be
# 33,000 calls; a median over this many is as steady and costs seconds, not minutes.
MAX_PROFILED_CALLS = 2000
_warned_backends: set[str] = set()


class BenchTimeout(TilecraftError, TimeoutError):
    """A benchmark ran past its time limit (checked between calls: a call in progress is not stopped)."""


def device_timer(target: Any = None, flush_bytes: int = FLUSH_BYTES) -> DeviceTimer:
    """The timer of `target`'s device (None: the target 'auto' selects), from its execution backend."""
    from tilecraft.jit.lower import resolve_context

    ctx = resolve_context("auto" if target is None else target)
    return ctx.execution_backend().timer(ctx.target, flush_bytes)


# A stand-in for a kernel clock where a device keeps no kernel records, set by whoever emulates a device
# (the TileLang compatibility layer's --cuda-on-cpu): a function of the flush size giving a KernelClock.
_kernel_clock_standin: list[Callable[[int], KernelClock]] = []


def set_kernel_clock_standin(make: Callable[[int], KernelClock] | None) -> None:
    """Use `make(flush_bytes)` for `backend="cupti"` on devices without kernel records (None: stop)."""
    _kernel_clock_standin[:] = [] if make is None else [make]


def device_kernel_clock(target: Any = None, flush_bytes: int = FLUSH_BYTES) -> KernelClock:
    """The kernel clock of `target`'s device, from its execution backend; ArgumentError if it has none."""
    from tilecraft.jit.lower import resolve_context

    ctx = resolve_context("auto" if target is None else target)
    return kernel_clock_of(ctx.execution_backend(), ctx.target, flush_bytes)


def kernel_clock_of(execution_backend: Any, target: Any, flush_bytes: int) -> KernelClock:
    """`execution_backend`'s kernel clock for `target`, a registered stand-in, or an ArgumentError."""
    try:
        return execution_backend.kernel_clock(target, flush_bytes)
    except KernelClockUnavailable as err:
        if _kernel_clock_standin:
            return _kernel_clock_standin[0](flush_bytes)
        raise ArgumentError(str(err)) from None


def _check_options(backend: str, return_mode: str, quantiles: Sequence[float] | None, device: Any) -> None:
    if return_mode not in RETURN_MODES:
        raise ArgumentError(f"return_mode must be one of {', '.join(RETURN_MODES)}, got {return_mode!r}")
    if backend not in BACKENDS:
        raise ArgumentError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "cudagraph" and backend not in _warned_backends:
        _warned_backends.add(backend)
        warnings.warn(
            "do_bench(backend='cudagraph') replays a captured graph in TileLang, which tilecraft does not "
            "do; timing with the device's timer instead (events on GPUs, the wall clock on the host), "
            "which includes launch overhead; backend='cupti' counts the kernels' time alone",
            RuntimeWarning,
            stacklevel=3,
        )
    if quantiles is not None and not all(0.0 <= q <= 1.0 for q in quantiles):
        raise ArgumentError(f"quantiles must lie in [0, 1], got {list(quantiles)}")
    if device is not None:
        raise ArgumentError(
            "do_bench(device=...) is not supported: tilecraft times on the device of the kernel's target; "
            "pass target= (a target naming the device) to the module-level do_bench instead"
        )


def _timed_calls(
    fn: Callable[[], Any], timer: DeviceTimer, count: int, deadline: float | None
) -> list[float]:
    """Milliseconds of `count` calls, each started with cold caches."""
    marks = []
    for i in range(count):
        timer.flush_cache()
        start = timer.mark()
        fn()
        marks.append((start, timer.mark()))
        _check_deadline(deadline, f"{i + 1} of {count} timed calls")
    timer.synchronize()
    return [timer.elapsed_ms(start, end) for start, end in marks]


def _check_deadline(deadline: float | None, progress: str) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise BenchTimeout(f"the benchmark ran past its time limit after {progress}")


def _call_counts(
    estimate_ms: float, warmup: float, rep: float, n_warmup: int, n_repeat: int
) -> tuple[int, int]:
    estimate_ms = max(estimate_ms, _MIN_ESTIMATE_MS)
    warm = n_warmup if n_warmup > 0 else max(1, int(warmup / estimate_ms))
    repeat = n_repeat if n_repeat > 0 else max(1, int(rep / estimate_ms))
    return warm, repeat


def _aggregate(
    times: list[float], quantiles: Sequence[float] | None, return_mode: str
) -> float | list[float]:
    values = np.asarray(times, dtype=np.float64)
    if quantiles is not None:
        found = [float(q) for q in np.quantile(values, list(quantiles))]
        return found[0] if len(found) == 1 else found
    return float(getattr(np, return_mode)(values))


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    _n_warmup: int = 0,
    _n_repeat: int = 0,
    quantiles: Sequence[float] | None = None,
    fast_flush: bool = True,
    backend: str = "event",
    return_mode: str = "median",
    device: Any = None,
    cache_size: int = 256,
    early_stop_baseline: float | None = None,
    *,
    timer: DeviceTimer | None = None,
    kernel_clock: KernelClock | None = None,
    target: Any = None,
    timeout: float | None = None,
) -> float | list[float]:
    """Milliseconds per call of `fn` (TileLang's signature; tilecraft's median by default).

    `warmup`, `rep`: time budgets in ms for warm-up and timed calls; `_n_warmup`, `_n_repeat`: call counts
    that override them. `quantiles`: return these quantiles instead. `early_stop_baseline`: return the
    estimate as soon as it exceeds this many ms. `cache_size`: MiB written to flush device caches between
    calls (`fast_flush` is accepted for compatibility). `timer`: how to time (default: the device of
    `target`, or of the target 'auto' selects). `backend="cupti"`: time the kernels alone with
    `kernel_clock` (default: the device's, from its execution backend). `timeout`: seconds, checked
    between calls.
    """
    _check_options(backend, return_mode, quantiles, device)
    flush_bytes = int(cache_size) * 1024 * 1024
    if backend == "cupti":
        clock = kernel_clock or device_kernel_clock(target, flush_bytes)
        timed: Callable[[int, float | None], list[float]] = lambda n, deadline: _profiled_calls(
            fn, clock, n, deadline
        )
    else:
        timer = timer or device_timer(target, flush_bytes)
        timed = lambda n, deadline: _timed_calls(fn, timer, n, deadline)
    deadline = None if timeout is None else time.perf_counter() + float(timeout)
    fn()
    if timer is not None:
        timer.synchronize()
    if _n_warmup > 0 and _n_repeat > 0 and early_stop_baseline is None:
        estimate_ms = 0.0  # both counts are given: the estimate would only cost time
    else:
        estimate_ms = float(np.mean(timed(_ESTIMATE_RUNS, deadline)))
        if early_stop_baseline is not None and estimate_ms > early_stop_baseline:
            return [estimate_ms] * len(quantiles) if quantiles else estimate_ms
    n_warmup, n_repeat = _call_counts(estimate_ms, warmup, rep, _n_warmup, _n_repeat)
    if backend == "cupti":
        n_repeat = min(n_repeat, MAX_PROFILED_CALLS)
    for i in range(n_warmup):
        fn()
        _check_deadline(deadline, f"{i + 1} of {n_warmup} warm-up calls")
    return _aggregate(timed(n_repeat, deadline), quantiles, return_mode)


def _profiled_calls(
    fn: Callable[[], Any], clock: KernelClock, count: int, deadline: float | None
) -> list[float]:
    """Kernel milliseconds of `count` calls, each started with cold caches (one profile of them all)."""
    times = clock.time_calls(fn, count)
    _check_deadline(deadline, f"{count} profiled calls")
    return times
