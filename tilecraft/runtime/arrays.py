"""Array interop: numpy arrays, torch tensors and any DLPack / array-interface object.

`as_array_arg` reads what a launcher needs (data pointer, shape, element strides, dtype, device,
whether the memory may be written) without copying. Devices are DLPack device codes (`devices.py`);
which codes an execution backend accepts (its spec's `device_types`), how it reads its own device's
arrays (`ExecutionBackend.array_readers`) and how it allocates outputs is the execution backend's
business. Fast paths for numpy and torch keep the per-call cost low.

Arrays whose elements are stored in non-native byte order are refused: kernels read memory as native
numbers, so such an array would be read as garbage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.ir import dtype as dt
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.devices import DLPACK_HOST, describe_device


@dataclass(frozen=True, slots=True)
class ArrayArg:
    """A view of a caller's array: what a launcher reads from it."""

    obj: Any
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DataType
    device_type: int
    device_id: int
    library: str
    writable: bool = True  # False for read-only memory (numpy `writeable=False`, a read-only interface)

    @property
    def device(self) -> str:
        return describe_device(self.device_type, self.device_id)


ArrayReader = Callable[[Any], "ArrayArg | None"]
"""A way to read one kind of array: its ArrayArg, or None for an object the reader does not know."""


def check_alignment(arg: ArrayArg, name: str, alignment: int) -> None:
    """Refuse an array whose data does not start on `alignment` bytes (what the kernel's code assumes:
    `CompiledArtifact.buffer_alignment`); the error says how to get an aligned one."""
    if alignment > 1 and arg.ptr % alignment:
        raise ArgumentError(
            f"parameter {name!r} starts at an address that is not {alignment}-byte aligned (a view with an "
            f"offset, such as x[1:]); the kernel's code assumes {alignment}-byte aligned buffers (vector "
            "accesses): pass a fresh array (x.clone(), x.copy()) or an aligned slice"
        )


def is_array(x: Any) -> bool:
    return (
        isinstance(x, np.ndarray)
        or _is_torch(x)
        or hasattr(x, "__dlpack__")
        or hasattr(x, "__array_interface__")
    )


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def as_array_arg(x: Any, name: str, readers: Sequence[ArrayReader] = ()) -> ArrayArg:
    """The ArrayArg of `x`; a clear error naming the parameter when `x` is not an array.

    `readers` are an execution backend's extra ways to read its device's arrays (tried first).
    """
    try:
        return _read(x, name, readers)
    except UnusableArray as err:
        raise ArgumentError(f"parameter {name!r}: {err}") from None


class UnusableArray(Exception):
    """Why an array cannot be passed, said without the parameter's name (readers do not know it);
    `as_array_arg` turns it into an ArgumentError that names the parameter."""


def _read(x: Any, name: str, readers: Sequence[ArrayReader]) -> ArrayArg:
    for read in readers:
        arg = read(x)
        if arg is not None:
            return arg
    if isinstance(x, np.ndarray):
        return _from_numpy(x)
    if _is_torch(x):
        return _from_torch(x)
    if hasattr(x, "__array_interface__"):
        return from_array_interface(x, x.__array_interface__, DLPACK_HOST, 0)
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(x, name)
    raise ArgumentError(
        f"parameter {name!r} expects an array (numpy, torch or any DLPack object), got {type(x).__name__}"
    )


def _from_numpy(x: np.ndarray) -> ArrayArg:
    itemsize = x.itemsize
    strides = tuple(s // itemsize for s in x.strides)
    ptr = x.__array_interface__["data"][0]
    return ArrayArg(x, ptr, x.shape, strides, _numpy_dtype(x.dtype), DLPACK_HOST, 0, "numpy",
                    x.flags.writeable)  # fmt: skip


_NUMPY_DTYPES: dict[np.dtype, DataType] = {}


def _numpy_dtype(dtype: np.dtype) -> DataType:
    """The DataType of a numpy dtype (cached: one dict lookup per call); UnusableArray if byte-swapped."""
    found = _NUMPY_DTYPES.get(dtype)
    if found is None:
        if not dtype.isnative:
            raise UnusableArray(
                f"its dtype {dtype.str!r} stores bytes in non-native order, which kernels would read as "
                "garbage; pass x.astype(x.dtype.newbyteorder('='))"
            )
        found = _NUMPY_DTYPES[dtype] = _dtype_of(dtype)
    return found


_TORCH_DEVICES: dict[Any, tuple[int, int]] = {}


def _from_torch(x: Any) -> ArrayArg:
    device = x.device
    code = _TORCH_DEVICES.get(device)
    if code is None:
        kind, index = x.__dlpack_device__()
        code = _TORCH_DEVICES[device] = (int(kind), int(index))
    return ArrayArg(x, x.data_ptr(), tuple(x.shape), tuple(x.stride()), _torch_dtype(x.dtype), code[0], code[1],
                    "torch")  # fmt: skip


_TORCH_DTYPES: dict[Any, DataType] = {}


def _torch_dtype(torch_dtype: Any) -> DataType:
    found = _TORCH_DTYPES.get(torch_dtype)
    if found is None:
        found = _dtype_of(torch_dtype)
        _TORCH_DTYPES[torch_dtype] = found
    return found


def _dtype_of(value: Any) -> DataType:
    try:
        return dt.as_dtype(value)
    except (TypeError, ValueError):
        raise UnusableArray(f"arrays of dtype {value} are not supported by tilecraft") from None


_TYPESTRS: dict[str, Any] = {}


def from_array_interface(x: Any, info: dict, device: int, index: int) -> ArrayArg:
    """An ArrayArg from an array-interface dict (numpy's protocol, or a device library's equivalent)."""
    typestr = _TYPESTRS.get(info["typestr"])
    if typestr is None:
        typestr = _TYPESTRS[info["typestr"]] = np.dtype(info["typestr"])
    shape = tuple(info["shape"])
    if info.get("strides") is None:
        strides = contiguous_strides(shape)
    else:
        strides = tuple(s // typestr.itemsize for s in info["strides"])
    address, read_only = info["data"]
    return ArrayArg(x, address, shape, strides, _numpy_dtype(typestr), device, index, "interface",
                    not read_only)  # fmt: skip


def _from_dlpack(x: Any, name: str) -> ArrayArg:
    """Any `__dlpack__` producer, wherever its memory lives (the execution backend's `check_device` says
    whether its launcher reads there); read in place."""
    from tilecraft.runtime import dlpack

    try:
        view = dlpack.read(x)
    except dlpack.DLPackError as err:
        raise UnusableArray(str(err)) from None
    return ArrayArg(x, view.ptr, view.shape, view.strides, view.dtype, view.device_type, view.device_id, "dlpack",
                    view.writable)  # fmt: skip


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The element strides of a compact row-major array of `shape` (the last dimension's is 1)."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= int(s)
    return tuple(reversed(strides))
