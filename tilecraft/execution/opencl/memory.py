"""The memory model of a call: every buffer argument lives in host memory and is copied into a device
buffer from the device's pool before the kernels run, then copied back after them (the regions, their
sharing and their checks: tilecraft/execution/host_memory.py). Device buffers return to the pool when
the call ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tilecraft.execution import host_memory
from tilecraft.execution.host_memory import HostRegion, Key
from tilecraft.execution.opencl.device import import_pyopencl
from tilecraft.runtime.arrays import ArrayArg

BACKEND = "opencl"


def host_region(arg: ArrayArg, name: str, written: bool = True) -> HostRegion:
    """The host bytes of `arg` (`host_memory.host_region`)."""
    return host_memory.host_region(arg, name, written, BACKEND)


def _regions(
    args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]]
) -> tuple[dict[Key, HostRegion], dict[int, Key]]:
    return host_memory.host_regions(args, buffers, BACKEND)


class Staging:
    """The device buffers of one call: copied in when made, `copy_back()` after the kernels, then
    `release()` (after the queue has finished) returns them to the pool. `buffers` lists each buffer
    parameter's (index, name, written); `by_param` maps each index to its device buffer."""

    def __init__(
        self, pool: Any, queue: Any, args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]]
    ) -> None:
        self._cl = import_pyopencl()
        self._queue = queue
        self.regions, keys = _regions(args, buffers)
        self.views = {key: region.view() for key, region in self.regions.items() if region.nbytes}
        # OpenCL has no empty buffers: an empty argument gets one byte that nothing reads.
        self.device = {key: pool.allocate(max(region.nbytes, 1)) for key, region in self.regions.items()}
        self.by_param = {index: self.device[key] for index, key in keys.items()}
        for key, view in self.views.items():
            self._cl.enqueue_copy(queue, self.device[key], view, is_blocking=False)

    def copy_back(self) -> None:
        """Enqueue the copies of every region the kernels write back into host memory."""
        for key, view in self.views.items():
            if self.regions[key].written:
                self._cl.enqueue_copy(self._queue, view, self.device[key], is_blocking=False)

    def release(self) -> None:
        for buffer in self.device.values():
            buffer.release()
        self.device.clear()
