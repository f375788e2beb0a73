"""TileLang's `tilelang.language.fp8`: the float8 dtypes of the platform.

tilecraft's targets use the OCP formats (`float8_e4m3fn`, `float8_e5m2`) as their float8 (what gemms read);
the FNUZ variants of older AMD GPUs (`float8_e4m3fnuz`, `float8_e5m2fnuz`) are dtypes for storage and
conversion only, which this function never picks.
"""

from __future__ import annotations

from typing import Any

from tilecraft.ir.dtype import DataType, float8_e4m3fn, float8_e5m2

_FORMATS = {"e4m3": float8_e4m3fn, "e5m2": float8_e5m2}


def determine_fp8_type(fp8_format: str = "e4m3") -> DataType:
    """The float8 dtype for `fp8_format` ("e4m3" or "e5m2")."""
    if fp8_format not in _FORMATS:
        raise ValueError(f"fp8_format must be one of {sorted(_FORMATS)}, got {fp8_format!r}")
    return _FORMATS[fp8_format]


def determine_torch_fp8_type(fp8_format: str = "e4m3") -> Any:
    """The torch dtype of `determine_fp8_type(fp8_format)` (needs torch)."""
    return determine_fp8_type(fp8_format).as_torch()


__all__ = ["determine_fp8_type", "determine_torch_fp8_type"]
