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
from tilecraft.execution import host_memory
from tilecraft.execution.host_memory import Key
from tilecraft.execution.wgpu.abi import device_dtype
from tilecraft.ir.dtype import numpy_dtype


@dataclass(frozen=True)
class HostRegion:
    """The host elements one buffer argument spans (`host_memory.HostRegion`), and how the device holds
    them."""

    bytes: host_memory.HostRegion
    host_dtype: np.dtype
    device_dtype: np.dtype

    @property
    def written(self) -> bool:
        return self.bytes.written

    @property
    def nbytes(self) -> int:
        return self.bytes.nbytes

    @property
    def count(self) -> int:
        """Elements from the first to the last."""
        return self.nbytes // self.host_dtype.itemsize

    def host(self) -> np.ndarray:
        """The elements in host memory (no copy)."""
        return self.bytes.view().view(self.host_dtype)

    def device_bytes(self) -> bytes:
        data = self.host()
        if data.dtype != self.device_dtype:
            data = data.astype(self.device_dtype)
        raw = data.tobytes()
        return raw + b"\0" * (-len(raw) % 4 or (4 if not raw else 0))

    def copy_back(self, device: memoryview) -> None:
        values = np.frombuffer(device, self.device_dtype, count=self.count)
        self.host()[...] = values.astype(self.host_dtype) if values.dtype != self.host_dtype else values


def regions(args: Sequence[Any], buffers: Sequence[tuple[int, str, bool]], f16: bool
            ) -> tuple[dict[Key, HostRegion], dict[int, Key]]:  # fmt: skip
    """The distinct host regions of the buffer arguments (`host_memory.host_regions`) with their element
    types, and each parameter's region; one region read as two dtypes is refused. `buffers` lists each
    buffer parameter's (index, name, written)."""
    found, keys = host_memory.host_regions(args, buffers, "wgpu")
    typed: dict[Key, HostRegion] = {}
    owners: dict[Key, str] = {}
    for index, name, _ in buffers:
        key, dtype = keys[index], args[index].dtype
        host = np.dtype(numpy_dtype(dtype))
        old = typed.get(key)
        if old is not None and old.host_dtype != host:
            raise ArgumentError(f"parameters {owners[key]!r} and {name!r} are one array read as "
                                f"{old.host_dtype} and {host}; pass separate arrays")  # fmt: skip
        typed[key] = HostRegion(found[key], host, np.dtype(device_dtype(dtype.name, f16)))
        owners.setdefault(key, name)
    return typed, keys
