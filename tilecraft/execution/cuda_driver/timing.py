"""Timing launches on an NVIDIA GPU for the profiler (`CudaRuntimeBackend.timer`).

When torch's CUDA is initialized (the program passes torch tensors, whose kernels launch on torch's
current stream), CUDA events recorded on that stream time the kernels on the device, and a torch buffer
zeroed before each timed call flushes the L2 cache (TileLang's and Triton's method). Otherwise (CuPy
arrays, say) the host's wall clock with the device synchronized at each mark, and a driver buffer
overwritten with cuMemsetD32 as the flush.
"""

from __future__ import annotations

import weakref
from typing import Any

from tilecraft._modules import imported
from tilecraft.execution.cuda_driver.driver import get_driver
from tilecraft.runtime.timing import DeviceTimer


class TorchEventTimer(DeviceTimer):
    """CUDA events on torch's current stream of `device`; the flush zeroes a `flush_bytes` torch buffer."""

    description = "CUDA events (torch)"

    def __init__(self, torch: Any, device: int, flush_bytes: int) -> None:
        super().__init__()
        self._torch = torch
        self._device = device
        self._flush_bytes = flush_bytes
        self._buffer: Any = None

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self._device)

    def flush_cache(self) -> None:
        if self._buffer is None:
            where = self._torch.device("cuda", self._device)
            self._buffer = self._torch.empty(self._flush_bytes // 4, dtype=self._torch.int32, device=where)
        self._buffer.zero_()

    def mark(self) -> Any:
        event = self._torch.cuda.Event(enable_timing=True)
        event.record(self._torch.cuda.current_stream(self._device))
        return event

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))


def _free(driver: Any, context: int, pointer: int) -> None:
    try:
        with driver.using_context(context):
            driver.mem_free(pointer)
    except Exception:  # noqa: BLE001 - freeing at collection is best effort (the driver may be shutting down)
        pass


class DriverFlush:
    """Overwrites a `nbytes` device buffer (allocated on first use, freed with this object)."""

    def __init__(self, driver: Any, context: int, nbytes: int) -> None:
        self._driver = driver
        self._context = context
        self._nbytes = nbytes
        self._pointer: int | None = None

    def __call__(self) -> None:
        driver = self._driver
        with driver.using_context(self._context):
            if self._pointer is None:
                self._pointer = driver.mem_alloc(self._nbytes)
                weakref.finalize(self, _free, driver, self._context, self._pointer).atexit = False
            driver.memset_d32(self._pointer, 0, self._nbytes // 4)


def cuda_timer(device: int, flush_bytes: int) -> DeviceTimer:
    """The timer for GPU `device`: torch's events when torch's CUDA is initialized, else the wall clock."""
    torch = imported("torch")
    if torch is not None and torch.cuda.is_initialized():
        return TorchEventTimer(torch, device, flush_bytes)
    driver = get_driver()
    context = driver.primary_context(device)

    def synchronize() -> None:
        with driver.using_context(context):
            driver.synchronize()

    return DeviceTimer(synchronize, DriverFlush(driver, context, flush_bytes))
