"""The memory model of a call: every buffer argument lives in host memory and is copied into a device
buffer before the kernels run, then copied back after them.

A buffer argument covers the bytes from its first element to its last (strided views included); the
same region passed twice shares one device buffer, partially overlapping regions are refused. Only the
buffers of parameters the kernel writes (`ParamInfo.written`) are copied back, and those must be
writable host memory: a read-only array there is an error, never a result silently dropped. Device
buffers come from the device's pool and return to it when the call ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.execution.opencl.device import import_pyopencl
from tilecraft.runtime.arrays import ArrayArg

Key = tuple[int, int]  # (address, nbytes) of a host region


class _RawMemory:
    """Host bytes at an address, presented to numpy through the array interface."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__array_interface__ = {
            "data": (address, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }


@dataclass(frozen=True)
class HostRegion:
    """The host bytes one buffer argument spans."""

    address: int
    nbytes: int
    written: bool  # the kernel writes it: copy it back

    def view(self) -> np.ndarray:
        """The bytes as a uint8 array, for copies (no copy is made here)."""
        return np.asarray(_RawMemory(self.address, self.nbytes))


def host_region(arg: ArrayArg, name: str, written: bool = True) -> HostRegion:
    """The region of `arg`: from its first element to its last, in bytes; `written` when the kernel
    writes parameter `name`, which then must be writable memory."""
    if any(s < 0 for s in arg.strides):
        raise ArgumentError(
            f"parameter {name!r} has negative strides {arg.strides}; the opencl execution backend copies "
            "each buffer from its first element on; pass a copy (numpy: np.ascontiguousarray)"
        )
    if 0 in arg.shape:
        return HostRegion(arg.ptr, 0, False)
    if written and not arg.writable:
        raise ArgumentError(
            f"parameter {name!r} is read-only memory, but the kernel writes it; pass a writable array"
        )
    extent = 1 + sum((n - 1) * s for n, s in zip(arg.shape, arg.strides))
    return HostRegion(arg.ptr, extent * arg.dtype.bytes, written)


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


def _regions(
    args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]]
) -> tuple[dict[Key, HostRegion], dict[int, Key]]:
    """The distinct host regions of the buffer arguments, and each parameter's region; refuses partial
    overlaps."""
    regions: dict[Key, HostRegion] = {}
    owners: dict[Key, str] = {}
    keys: dict[int, Key] = {}
    for index, name, written in buffers:
        region = host_region(args[index], name, written)
        key = (region.address, region.nbytes)
        regions[key] = _merge(regions[key], region) if key in regions else region
        owners.setdefault(key, name)
        keys[index] = key
    _check_overlaps(regions, owners)
    return regions, keys


def _merge(a: HostRegion, b: HostRegion) -> HostRegion:
    """One region passed as two arguments: copied back if the kernel writes either parameter."""
    return HostRegion(a.address, a.nbytes, a.written or b.written)


def _check_overlaps(regions: dict[Key, HostRegion], owners: dict[Key, str]) -> None:
    spans = sorted((r.address, r.address + r.nbytes, owners[k]) for k, r in regions.items() if r.nbytes)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise ArgumentError(
                f"parameters {first!r} and {second!r} overlap in memory without being the same array; the "
                "opencl execution backend copies each buffer to the device separately, so pass separate "
                "arrays (or the same array twice)"
            )
