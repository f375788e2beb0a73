"""Reading any array that implements `__dlpack__` (JAX, CuPy, NumPy, torch, ...) without a copy.

The producer's capsule is opened with ctypes and only read: its data pointer, device, dtype, shape and
strides; the capsule is never consumed, so its destructor gives the producer its tensor back, while
the caller's array (which the returned ArrayArg keeps) holds the memory. A versioned capsule (DLPack
1.0, asked for with `max_version=(1, 0)`) also says whether the memory is read-only; an older
producer's legacy capsule cannot, and its memory counts as writable.
"""

from __future__ import annotations

import ctypes
from typing import Any

from tilecraft.ir import dtype as dt
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.arrays import contiguous_strides

READ_ONLY_FLAG = 1 << 0
_VERSIONED = b"dltensor_versioned"
_LEGACY = b"dltensor"
# DLDataTypeCode -> the tilecraft dtype name of each width
_CODES = {
    0: {8: "int8", 16: "int16", 32: "int32", 64: "int64"},
    1: {8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"},
    2: {16: "float16", 32: "float32", 64: "float64"},
    4: {16: "bfloat16"},
    6: {8: "bool"},
}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]  # fmt: skip


class _Versioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor),
    ]  # fmt: skip


class _Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DLPackView:
    """What a DLPack capsule says about an array (element strides, dtype, device, writability)."""

    __slots__ = ("ptr", "shape", "strides", "dtype", "device_type", "device_id", "writable")

    def __init__(self, ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: DataType,
                 device_type: int, device_id: int, writable: bool) -> None:  # fmt: skip
        self.ptr, self.shape, self.strides, self.dtype = ptr, shape, strides, dtype
        self.device_type, self.device_id, self.writable = device_type, device_id, writable


class DLPackError(ValueError):
    """A capsule tilecraft cannot read: the reason, without the parameter's name."""


def capsule_of(x: Any) -> Any:
    """`x.__dlpack__()`, versioned when the producer supports it; never a copy."""
    for keywords in ({"max_version": (1, 0), "copy": False}, {"max_version": (1, 0)}):
        try:
            return x.__dlpack__(**keywords)
        except TypeError:  # a producer from before DLPack 1.0 (or 2023's array API) lacks the keyword
            continue
    return x.__dlpack__()


def read(x: Any) -> DLPackView:
    """The view of `x`'s memory its DLPack capsule gives; DLPackError for what kernels cannot read."""
    capsule = capsule_of(x)
    if _is_valid(capsule, _VERSIONED):
        managed = _Versioned.from_address(_get_pointer(capsule, _VERSIONED))
        if managed.major != 1:
            raise DLPackError(f"its DLPack capsule is version {managed.major}.{managed.minor}; tilecraft reads 1.x")
        return _view(managed.dl_tensor, not managed.flags & READ_ONLY_FLAG)
    if _is_valid(capsule, _LEGACY):
        return _view(_Legacy.from_address(_get_pointer(capsule, _LEGACY)).dl_tensor, True)
    raise DLPackError("its __dlpack__ returned something that is not an unconsumed DLPack capsule")


def _view(t: _Tensor, writable: bool) -> DLPackView:
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim))
    strides = tuple(t.strides[i] for i in range(ndim)) if t.strides else contiguous_strides(shape)
    ptr = (t.data or 0) + t.byte_offset
    return DLPackView(ptr, shape, strides, _dtype(t.dtype), t.device.device_type, t.device.device_id, writable)


def _dtype(d: _DataType) -> DataType:
    name = _CODES.get(d.code, {}).get(d.bits)
    if name is None or d.lanes != 1:
        raise DLPackError(
            f"its DLPack dtype (code {d.code}, {d.bits} bits, {d.lanes} lanes) is not one tilecraft supports"
        )
    return dt.as_dtype(name)


def as_callers_array(array: Any, like: Any) -> Any:
    """`array` (an output tilecraft allocated) as the array type of `like` (the caller's input), without a
    copy, through that library's `from_dlpack`; `array` itself when `like`'s library has none."""
    namespace = getattr(like, "__array_namespace__", None)
    module = namespace() if namespace is not None else _module_of(like)
    from_dlpack = getattr(module, "from_dlpack", None)
    if from_dlpack is None or type(array) is type(like):
        return array
    return from_dlpack(array)


def _module_of(x: Any) -> Any:
    import sys

    return sys.modules.get(type(x).__module__.split(".")[0])
