"""TVM's `tvm.runtime`: `DataType` (tilecraft's) and `convert` (Python values to tilecraft IR)."""

from __future__ import annotations

from typing import Any

from tilecraft.compat.tvm._mapped import refusing
from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType


def convert(value: Any, span=None) -> Any:
    """TVM's `runtime.convert`: a number becomes a constant expression (int32 / int64 for an int,
    float32 for a float, bool for a bool), a list or tuple a list of converted values, a string stays a
    string; IR values are returned as they are."""
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    if isinstance(value, (bool, int, float)):
        return E.convert(value)
    return value


__all__ = ["DataType", "convert"]
__getattr__ = refusing("tvm.runtime")
