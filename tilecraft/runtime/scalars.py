"""The values a call may pass for a scalar parameter or bind to a symbolic dim.

A scalar parameter takes a Python number of its kind (an int for an integer dtype, a bool for bool; an
int, a float or a bool for a float dtype), or a numpy/torch scalar or 0-d array of that kind. An integer
must fit its dtype, since a launcher that packed it into fewer bits would wrap it silently. Floats are
passed as given: NaN and infinities are legitimate arguments. A symbolic dim must fit its variable's
dtype too, or the kernel would compute with a wrapped size.
"""

from __future__ import annotations

from typing import Any

from tilecraft.errors import ArgumentError, short_repr
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.artifact import ParamInfo

# What each dtype kind accepts, for error messages (numpy and torch scalars of the kind count too).
_KINDS = {"bool": "a bool", "int": "an integer", "uint": "an integer"}
_FLOAT = "an int or a float"


def integer_range(dtype: DataType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    if dtype.is_uint:
        return 0, (1 << dtype.bits) - 1
    half = 1 << (dtype.bits - 1)
    return -half, half - 1


def check_scalar(info: ParamInfo, value: Any) -> Any:
    """`value` as the plain Python number a launcher passes for scalar parameter `info`; ArgumentError
    naming the parameter if it is of the wrong kind or out of the dtype's range. An address (`T.ptr`)
    also takes an array: its data address (a torch tensor's `data_ptr()`, a numpy array's)."""
    plain = _plain(value)
    if info.pointer and not isinstance(plain, int):
        plain = _data_address(info, value)
    dtype = info.dtype
    if dtype.is_bool:
        ok = isinstance(plain, bool)
    elif dtype.is_integer:
        ok = isinstance(plain, int) and not isinstance(plain, bool)
    else:
        ok = isinstance(plain, (int, float))
    if not ok:
        raise ArgumentError(
            f"parameter {info.name!r} ({dtype} scalar) takes {_KINDS.get(dtype.kind, _FLOAT)}; "
            f"got {type(value).__name__} {short_repr(value)}"
        )
    if dtype.is_integer:
        low, high = integer_range(dtype)
        if not low <= plain <= high:
            raise ArgumentError(
                f"parameter {info.name!r} ({dtype} scalar) must be from {low} to {high}; got {plain}"
            )
    return plain


def _data_address(info: ParamInfo, value: Any) -> int:
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr):  # torch
        return int(data_ptr())
    interface = getattr(value, "__array_interface__", None)
    if isinstance(interface, dict) and "data" in interface:  # numpy and what exports the same
        return int(interface["data"][0])
    raise ArgumentError(
        f"parameter {info.name!r} (an address, T.ptr) takes an int or an array whose data address it passes; "
        f"got {type(value).__name__} {short_repr(value)}"
    )


def _plain(value: Any) -> Any:
    """numpy and torch scalars (and 0-d arrays) as the Python number they hold; anything else as is."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def check_dim(var_name: str, dtype: DataType, value: int, where: str) -> None:
    """A size or stride bound to symbolic dim `var_name` fits its dtype; else an ArgumentError that says
    where it came from and how to declare a wider dim."""
    low, high = integer_range(dtype)
    if low <= value <= high:
        return
    raise ArgumentError(
        f"{where} is {value}, which does not fit {var_name} ({dtype}: {low} to {high}); declare it wider, "
        f'for example {var_name} = T.dynamic("{var_name}", "int64")'
    )
