"""Tensor maps (TMA descriptors) for a launch: encoded on the host with `cuTensorMapEncodeTiled` from a
buffer argument's pointer, dims and strides, checked first against the driver's documented rules (so a
bad argument is named, not reported as CUDA_ERROR_INVALID_VALUE), and cached per argument set.

The driver's order is innermost dim first: `dims[0]` is the buffer's last dim, `strides` are the byte
strides of dims 1..rank-1 (the innermost stride is the element size), `box` is `TensorMapInfo.box`.
Elements past the tensor's edge are filled with zeros (CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from tilecraft.errors import ArgumentError
from tilecraft.runtime.arrays import contiguous_strides
from tilecraft.runtime.artifact import TensorMapInfo

MAP_BYTES = 128
MAP_ALIGN = 64
# CUtensorMapDataType
DATA_TYPES = {
    "uint8": 0, "uint16": 1, "uint32": 2, "int32": 3, "uint64": 4, "int64": 5,
    "float16": 6, "float32": 7, "float64": 8, "bfloat16": 9,
    "float8_e4m3fn": 0, "float8_e5m2": 0,  # bytes moved unconverted: TMA has no float8 type before sm_100
    "int8": 0, "int16": 1,  # moved unconverted too (a TMA store of an int8 / int16 tile)
}  # fmt: skip
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # bytes -> CUtensorMapSwizzle
INTERLEAVE_NONE = 0
L2_PROMOTION_128B = 2
OOB_FILL_ZERO = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: elements past the edge read zero
GLOBAL_ALIGN = 16
STRIDE_MULTIPLE = 16
MAX_DIM = 2**32
MAX_STRIDE = 2**40
MAX_BOX = 256
CACHE_LIMIT = 256  # encoded maps kept per tensor map of a kernel (each 128 bytes)
TMA_FIX = "pass a contiguous tensor whose address is 16-byte aligned, or compile with tl.disable_tma_lower"


def encode_arguments(info: TensorMapInfo, address: int, shape: Sequence[int], strides: Sequence[int]
                     ) -> tuple[Any, ...]:  # fmt: skip
    """The arguments of cuTensorMapEncodeTiled after the output pointer, for buffer `info.buffer` at
    `address` with `shape` and element `strides` (outermost first, as the kernel declares them)."""
    rank = len(shape)
    name = info.buffer
    if rank != len(info.box) or rank != len(strides):
        raise ArgumentError(f"tensor map of {name}: a {rank}-dim argument for a {len(info.box)}-dim box")
    code = DATA_TYPES.get(info.dtype.name)
    if code is None:
        raise ArgumentError(f"tensor map of {name}: no TMA data type for {info.dtype}")
    size = info.dtype.bytes
    if address % GLOBAL_ALIGN:
        raise ArgumentError(
            f"{name}: address {address:#x} is not 16-byte aligned, as a TMA load needs; {TMA_FIX}"
        )
    dims = list(reversed([int(d) for d in shape]))
    if any(not 0 < d <= MAX_DIM for d in dims):
        raise ArgumentError(
            f"{name}: dims {tuple(shape)} must be 1 to 2^32 for a TMA load; empty tensors have none"
        )
    if int(strides[-1]) != 1:
        raise ArgumentError(f"{name}: the innermost dim must be contiguous for a TMA load; {TMA_FIX}")
    byte_strides = [int(s) * size for s in reversed(strides[:-1])]
    for s in byte_strides:
        if s % STRIDE_MULTIPLE or not 0 < s < MAX_STRIDE:
            raise ArgumentError(
                f"{name}: a stride of {s} bytes; a TMA load needs strides that are multiples of 16 bytes "
                f"below 2^40 (row lengths a multiple of {STRIDE_MULTIPLE // size} elements); {TMA_FIX}"
            )
    _check_box(info)
    return (
        code, rank, address,
        (ctypes.c_uint64 * rank)(*dims),
        (ctypes.c_uint64 * max(1, rank - 1))(*byte_strides),
        (ctypes.c_uint32 * rank)(*info.box),
        (ctypes.c_uint32 * rank)(*([1] * rank)),
        INTERLEAVE_NONE, SWIZZLES[info.swizzle], L2_PROMOTION_128B, OOB_FILL_ZERO,
    )  # fmt: skip


def _check_box(info: TensorMapInfo) -> None:
    """The box rules that depend only on the kernel (a violation is a code generator bug)."""
    inner = info.box[0] * info.dtype.bytes
    if any(not 0 < b <= MAX_BOX for b in info.box) or inner % 16:
        raise ArgumentError(f"tensor map of {info.buffer}: box {info.box} breaks TMA's box rules")
    if info.swizzle and inner > info.swizzle:
        raise ArgumentError(
            f"tensor map of {info.buffer}: an inner box of {inner} bytes exceeds the {info.swizzle}-byte swizzle"
        )


class TensorMaps:
    """Encoded tensor maps of one `TensorMapInfo`, by (address, shape, strides); `__call__` returns the
    host address of the 128-byte map for `cuLaunchKernel`'s parameter array."""

    def __init__(self, driver: Any, info: TensorMapInfo, symbol: str) -> None:
        self.driver, self.info, self.symbol = driver, info, symbol
        self.maps: dict[tuple, tuple[Any, int]] = {}

    def __call__(self, address: int, shape: tuple[int, ...]) -> int:
        """The map of the row-major (contiguous: the launchers check it) buffer at `address`."""
        key = (address, shape)
        found = self.maps.get(key)
        if found is None:
            found = self._encode(address, shape, contiguous_strides(shape))
            if len(self.maps) >= CACHE_LIMIT:
                self.maps.clear()
            self.maps[key] = found
        return found[1]

    def _encode(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[Any, int]:
        args = encode_arguments(self.info, address, shape, strides)
        storage, aligned = aligned_map()
        detail = (
            f"tensor map of {self.info.buffer} for kernel {self.symbol} (shape {shape}, box {self.info.box})"
        )
        self.driver.encode_tensor_map_tiled(aligned, *args, detail=detail)
        return storage, aligned


def aligned_map() -> tuple[Any, int]:
    """128 bytes at a 64-byte aligned host address (and the buffer that owns them)."""
    storage = ctypes.create_string_buffer(MAP_BYTES + MAP_ALIGN)
    base = ctypes.addressof(storage)
    return storage, base + (-base % MAP_ALIGN)
