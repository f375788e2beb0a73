"""Packed 4-bit arrays (int4, uint4, float4_e2m1fn) at the call boundary.

A kernel's global memory holds a 4-bit tensor of logical shape (..., N) as bytes of shape
(..., ceil(N / 2)): element j of a row is the low nibble of byte j // 2 for even j, the high one for
odd j, and each row starts on a whole byte (an odd N leaves the last byte's high nibble unused). This
is TileLang's and torch's convention (torch.float4_e2m1fn_x2 holds two values per element).

Callers pass such data as its bytes: a torch.float4_e2m1fn_x2, torch.uint8 or torch.int8 tensor (any
array library's uint8 / int8 arrays too) of shape (..., ceil(N / 2)), whose last dim is contiguous.
NumPy arrays of ml_dtypes' 4-bit types (int4, uint4, float4_e2m1fn), which numpy stores one value per
byte, are packed into a new byte array for the call and, where the kernel writes them, unpacked back
into the caller's array after it; outputs allocated for numpy callers are such arrays.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.ir import dtype as dt
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.arrays import ArrayArg


def byte_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of the bytes that hold a packed tensor of logical `shape`."""
    return (*shape[:-1], (shape[-1] + 1) // 2)


def storage_dtype(dtype: DataType) -> DataType:
    """The dtype of the bytes an output of packed `dtype` is allocated as (TileLang's choice):
    float4_e2m1fnx2 (torch.float4_e2m1fn_x2) for float4_e2m1fn, int8 for int4, uint8 for uint4."""
    if dtype.is_float:
        return dtype.with_lanes(2)
    return dt.int8 if dtype.is_int else dt.uint8


def holds_bytes(arg: ArrayArg, dtype: DataType) -> bool:
    """`arg` is the bytes of packed `dtype` data: pairs of it (float4_e2m1fnx2), uint8 or int8."""
    return arg.dtype in (dtype.with_lanes(2), dt.uint8, dt.int8)


def pack(values: np.ndarray) -> np.ndarray:
    """The bytes of a numpy array of a 4-bit ml_dtypes type (one value per byte), packed by rows."""
    codes = np.ascontiguousarray(values).view(np.uint8) & 15
    if codes.ndim == 0:
        codes = codes.reshape(1)
    if codes.shape[-1] % 2:
        codes = np.concatenate([codes, np.zeros((*codes.shape[:-1], 1), np.uint8)], axis=-1)
    return np.ascontiguousarray(codes[..., 0::2] | (codes[..., 1::2] << 4))


def unpack(packed: np.ndarray, n: int, dtype: DataType) -> np.ndarray:
    """The (..., n) values of `dtype` held by packed bytes of shape (..., ceil(n / 2)), as the ml_dtypes
    numpy type (one value per byte)."""
    raw = np.asarray(packed).view(np.uint8)
    codes = np.stack([raw & 15, raw >> 4], axis=-1).reshape(*raw.shape[:-1], -1)[..., :n]
    return np.ascontiguousarray(codes).view(dt.numpy_dtype(dtype))


def logical_view(arg: ArrayArg, dtype: DataType, last: int, name: str) -> ArrayArg:
    """The packed bytes `arg` seen as `dtype` elements: shape (..., last), element strides (rows of the
    bytes' stride, in nibbles). The bytes' last dim must be contiguous."""
    if not arg.shape:
        raise ArgumentError(f"parameter {name!r}: packed {dtype} data needs at least one dim")
    if arg.shape[-1] > 1 and arg.strides[-1] != 1:
        raise ArgumentError(
            f"parameter {name!r}: the bytes of packed {dtype} data must be contiguous along the last dim, got "
            f"strides {arg.strides} for shape {arg.shape}; pass a contiguous copy"
        )
    strides = (*(2 * s for s in arg.strides[:-1]), 1)
    return replace(arg, shape=(*arg.shape[:-1], last), strides=strides, dtype=dtype)


def launch_bytes(arg: ArrayArg) -> ArrayArg:
    """What a launcher takes for packed data: its bytes, as uint8."""
    return replace(arg, dtype=dt.uint8)


def expected(dtype: DataType, shape: Any) -> str:
    """How to pass a packed parameter of logical `shape`, for error messages."""
    kinds = {"float": "torch.float4_e2m1fn_x2 or uint8", "int": "int8 or uint8", "uint": "uint8 or int8"}
    kind = "float" if dtype.is_float else dtype.kind
    return (
        f"packed {dtype} data of logical shape {shape}: {kinds[kind]} bytes of shape (..., ceil(N / 2)), two "
        f"values a byte (low nibble first), or a numpy array of ml_dtypes.{dtype.name}"
    )
