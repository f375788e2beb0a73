"""The memory model of a call: every buffer argument lives in host memory and is copied into a storage
buffer before the kernels run; only the buffers of parameters the kernels write are copied back.

A buffer argument covers its elements from the first to the last (strided views included); the same
region passed twice shares one storage buffer, partially overlapping regions are refused. Elements WGSL
cannot store (8- and 16-bit integers, bfloat16, float16 without shader-f16) are widened to 32 bits on
the way in and narrowed on the way out (`abi.device_dtype`); narrowing is exact, since the kernel
rounds or wraps every value it stores. Storage buffer sizes are padded to 4 bytes, as WebGPU requires.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.execution.wgpu.abi import device_dtype
from tilecraft.ir.dtype import numpy_dtype
from tilecraft.runtime.arrays import ArrayArg

Key = tuple[int, int]  # (address, nbytes) of a host region


class _RawMemory:
    """Host bytes at an address, presented to numpy through the array interface."""

    def __init__(self, address: int, nbytes: int) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,), "typestr": "|u1", "version": 3}


@dataclass(frozen=True)
class HostRegion:
    """The host elements one buffer argument spans, and how the device holds them."""

    address: int
    count: int  # elements from the first to the last
    host_dtype: np.dtype
    device_dtype: np.dtype
    written: bool

    @property
    def nbytes(self) -> int:
        return self.count * self.host_dtype.itemsize

    def host(self) -> np.ndarray:
        """The elements in host memory (no copy)."""
        raw = np.asarray(_RawMemory(self.address, self.nbytes))
        return raw.view(self.host_dtype)

    def device_bytes(self) -> bytes:
        data = self.host()
        if data.dtype != self.device_dtype:
            data = data.astype(self.device_dtype)
        raw = data.tobytes()
        return raw + b"\0" * (-len(raw) % 4 or (4 if not raw else 0))

    def copy_back(self, device: memoryview) -> None:
        values = np.frombuffer(device, self.device_dtype, count=self.count)
        self.host()[...] = values.astype(self.host_dtype) if values.dtype != self.host_dtype else values


def host_region(arg: ArrayArg, name: str, written: bool, f16: bool) -> HostRegion:
    """The region of `arg`; `written` when the kernel writes parameter `name`, which must then be
    writable memory."""
    if any(s < 0 for s in arg.strides):
        raise ArgumentError(
            f"parameter {name!r} has negative strides {arg.strides}; the wgpu execution backend copies each "
            "buffer from its first element on; pass a copy (numpy: np.ascontiguousarray)"
        )
    host = np.dtype(numpy_dtype(arg.dtype))
    device = np.dtype(device_dtype(arg.dtype.name, f16))
    if 0 in arg.shape:
        return HostRegion(arg.ptr, 0, host, device, False)
    if written and not arg.writable:
        raise ArgumentError(f"parameter {name!r} is read-only memory, but the kernel writes it; pass a writable array")
    count = 1 + sum((n - 1) * s for n, s in zip(arg.shape, arg.strides))
    return HostRegion(arg.ptr, count, host, device, written)


def regions(args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]], f16: bool
            ) -> tuple[dict[Key, HostRegion], dict[int, Key]]:  # fmt: skip
    """The distinct host regions of the buffer arguments and each parameter's region; refuses partial
    overlaps. `buffers` lists each buffer parameter's (index, name, written)."""
    found: dict[Key, HostRegion] = {}
    owners: dict[Key, str] = {}
    keys: dict[int, Key] = {}
    for index, name, written in buffers:
        region = host_region(args[index], name, written, f16)
        key = (region.address, region.nbytes)
        if key in found:
            old = found[key]
            if old.host_dtype != region.host_dtype:
                raise ArgumentError(f"parameters {owners[key]!r} and {name!r} are one array read as "
                                    f"{old.host_dtype} and {region.host_dtype}; pass separate arrays")  # fmt: skip
            region = HostRegion(old.address, old.count, old.host_dtype, old.device_dtype, old.written or written)
        found[key] = region
        owners.setdefault(key, name)
        keys[index] = key
    spans = sorted((r.address, r.address + r.nbytes, owners[k]) for k, r in found.items() if r.nbytes)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise ArgumentError(
                f"parameters {first!r} and {second!r} overlap in memory without being the same array; the wgpu "
                "execution backend copies each buffer to the device separately, so pass separate arrays (or "
                "the same array twice)"
            )
    return found, keys
