"""Kernel time on an NVIDIA GPU from CUPTI's activity records, read through torch's profiler (Kineto).

`do_bench(backend="cupti")` must count what the GPU spent in the kernels a call launched, not the host's
launch overhead: for a kernel of 5 us, a Python launch of 10 us would otherwise be most of the figure.
CUPTI records each kernel's start and end on the device, whichever library launched it (our driver-API
launches included); torch's profiler collects those records. Each timed call runs after a cache flush
inside a named range; the flush's kernels are left out by that range, and every other kernel belongs to
the call after the flush that precedes it. A call's figure is the sum of its kernels' durations
(TileLang's measure; gaps between kernels are host time).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tilecraft.runtime.timing import KernelClock, KernelClockUnavailable

FLUSH_RANGE = "tilecraft.do_bench.flush"


@dataclass(frozen=True)
class DeviceSpan:
    """One interval on the GPU's clock, in microseconds."""

    start: float
    end: float


def calls_kernels(kernels: Sequence[DeviceSpan], flushes: Sequence[DeviceSpan]) -> list[DeviceSpan]:
    """The kernels that ran outside every flush's range."""
    return [k for k in kernels if not any(f.start <= k.start and k.end <= f.end for f in flushes)]


def split_by_flushes(kernels: Sequence[DeviceSpan], flushes: Sequence[DeviceSpan], count: int) -> list[float]:
    """Milliseconds of kernel time per call: the kernels inside a flush's range are the flush's; every
    other kernel belongs to the call that follows the last flush started before it."""
    if len(flushes) != count:
        raise KernelClockUnavailable(
            f"the profiler recorded {len(flushes)} GPU ranges for {count} cache flushes, so kernels cannot "
            "be assigned to calls; use do_bench(backend='event')"
        )
    flushes = sorted(flushes, key=lambda s: s.start)
    totals = [0.0] * count
    for kernel in calls_kernels(kernels, flushes):
        call = sum(1 for f in flushes if f.start <= kernel.start) - 1
        if call >= 0:
            totals[call] += kernel.end - kernel.start
    return [t * 1e-3 for t in totals]


class TorchProfilerClock(KernelClock):
    """CUPTI kernel records of GPU `device`, collected by torch's profiler; the flush zeroes a torch
    buffer of `flush_bytes` before each call."""

    description = "CUPTI kernel time (torch.profiler)"

    def __init__(self, torch: Any, device: int, flush_bytes: int) -> None:
        self._torch = torch
        self._device = device
        self._flush_bytes = flush_bytes
        self._buffer: Any = None

    def _flush(self) -> None:
        if self._buffer is None:
            where = self._torch.device("cuda", self._device)
            self._buffer = self._torch.empty(self._flush_bytes // 4, dtype=self._torch.int32, device=where)
        self._buffer.zero_()

    def time_calls(self, fn: Callable[[], Any], count: int) -> list[float]:
        torch = self._torch
        profiler = torch.profiler
        torch.cuda.synchronize(self._device)  # nothing launched before the first flush may be recorded
        activities = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
        with profiler.profile(activities=activities) as session:
            for _ in range(count):
                with profiler.record_function(FLUSH_RANGE):
                    self._flush()
                fn()
            torch.cuda.synchronize(self._device)
        kernels, flushes = self._spans(session.events())
        if not calls_kernels(kernels, flushes):
            raise KernelClockUnavailable(
                "the profiler recorded no GPU kernel for the timed calls: the function launched nothing on "
                f"GPU {self._device}, or CUPTI is not working in this process; use do_bench(backend='event')"
            )
        return split_by_flushes(kernels, flushes, count)

    def _spans(self, events: Sequence[Any]) -> tuple[list[DeviceSpan], list[DeviceSpan]]:
        kernels: list[DeviceSpan] = []
        flushes: list[DeviceSpan] = []
        for event in events:
            if getattr(getattr(event, "device_type", None), "name", "") != "CUDA":
                continue
            if getattr(event, "device_index", self._device) != self._device:
                continue
            span = DeviceSpan(float(event.time_range.start), float(event.time_range.end))
            if not event.is_user_annotation:
                kernels.append(span)
            elif event.name == FLUSH_RANGE:
                flushes.append(span)
        return kernels, flushes


def cuda_kernel_clock(device: int, flush_bytes: int) -> KernelClock:
    """The kernel clock of GPU `device`: CUPTI through torch's profiler, or an error naming the way out."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        raise KernelClockUnavailable(
            "do_bench(backend='cupti') reads CUPTI's kernel records through torch's profiler, and no "
            "CUDA build of torch is importable here; install one (pip install torch) or use "
            "backend='event' (CUDA events, which count the launch too)"
        )
    return TorchProfilerClock(torch, device, flush_bytes)
