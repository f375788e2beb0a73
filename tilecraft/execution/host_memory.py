"""Host arrays staged through a device: what the execution backends whose launchers copy host memory into
device buffers before the kernels and back after them share, so that each supplies
only how it makes, fills and reads its own buffers.

A buffer argument covers the bytes from its first element to its last (strided views included); the
same region passed twice shares one device buffer, partially overlapping regions are refused. Only the
buffers of parameters the kernel writes (`ParamInfo.written`) are copied back, and those must be
writable host memory: a read-only array there is an error, never a result silently dropped. Such a
launcher reads host arrays only (`refuse_device`) and runs each call on its device's own queue, so it
takes no stream (`refuse_stream`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.devices import describe_device

Key = tuple[int, int]  # (address, nbytes) of a host region


class _RawMemory:
    """Host bytes at an address, presented to numpy through the array interface."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,), "typestr": "|u1", "version": 3}


@dataclass(frozen=True)
class HostRegion:
    """The host bytes one buffer argument spans."""

    address: int
    nbytes: int
    written: bool  # the kernel writes it: copy it back

    @property
    def key(self) -> Key:
        return (self.address, self.nbytes)

    def view(self) -> np.ndarray:
        """The bytes as a uint8 array, for copies (no copy is made here)."""
        return np.asarray(_RawMemory(self.address, self.nbytes))


def host_region(arg: ArrayArg, name: str, written: bool, backend: str) -> HostRegion:
    """The region of `arg`: from its first element to its last, in bytes; `written` when the kernel
    writes parameter `name`, which then must be writable memory."""
    if any(s < 0 for s in arg.strides):
        raise ArgumentError(
            f"parameter {name!r} has negative strides {arg.strides}; the {backend} execution backend copies "
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


def host_regions(args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]], backend: str
                 ) -> tuple[dict[Key, HostRegion], dict[int, Key]]:  # fmt: skip
    """The distinct host regions of the buffer arguments, and each parameter's region; refuses partial
    overlaps. `buffers` lists each buffer parameter's (index, name, written); one region passed as two
    arguments is copied back if the kernel writes either."""
    regions: dict[Key, HostRegion] = {}
    owners: dict[Key, str] = {}
    keys: dict[int, Key] = {}
    for index, name, written in buffers:
        region = host_region(args[index], name, written, backend)
        key = region.key
        old = regions.get(key)
        regions[key] = region if old is None else HostRegion(old.address, old.nbytes, old.written or region.written)
        owners.setdefault(key, name)
        keys[index] = key
    spans = sorted((r.address, r.address + r.nbytes, owners[k]) for k, r in regions.items() if r.nbytes)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise ArgumentError(
                f"parameters {first!r} and {second!r} overlap in memory without being the same array; the "
                f"{backend} execution backend copies each buffer to the device separately, so pass separate "
                "arrays (or the same array twice)"
            )
    return regions, keys


def refuse_stream(stream: Any, backend: str, how: str) -> None:
    """A launcher that runs each call synchronously on its device's queue takes no `stream=`."""
    if stream is not None:
        raise ArgumentError(
            f"stream= is not supported by the {backend} execution backend: each call copies its arrays in, "
            f"{how} and returns when the results are back in the arrays"
        )


def refuse_device(arg: ArrayArg, name: str, backend: str, device: str, fix: str) -> None:
    """The error for an array that is not in host memory, which a launcher copying host arrays to `device`
    cannot read; `fix` says what to pass instead."""
    raise ArgumentError(
        f"parameter {name!r} is on {describe_device(arg.device_type, arg.device_id)}, but the {backend} "
        f"execution backend takes host arrays (it copies them to {device} and back itself); {fix}"
    )
