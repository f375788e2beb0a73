"""Rounding to the narrow float types (float16, bfloat16, float8, float6, float4, e8m0) exactly once.

ml_dtypes converts float32 to its types with one rounding in every version, but float64 and wide
integers in versions before its double-rounding fix go through float32 first: a value just off a
midpoint of the narrow type lands on it and the second rounding goes the wrong way. So these functions
hand ml_dtypes a float32 rounded *to odd* (truncated, the last bit set when anything was cut off), the
same step as the generated code's tc_f64_to_f32_odd: float32 keeps at least two bits more than any
narrow type, so the second rounding gives the directly rounded result, whatever ml_dtypes is installed.
"""

from __future__ import annotations

import numpy as np

from tilecraft.ir.dtype import DataType, numpy_dtype

NARROW_KINDS = ("float", "bfloat", "float8", "microfloat")


def is_narrow_float(dtype: DataType) -> bool:
    return dtype.kind in NARROW_KINDS and dtype.bits < 32


def float32_odd(values: np.ndarray) -> np.ndarray:
    """float64 or integer `values` as float32, rounded to odd; NaN and infinities as they are, finite
    values past float32's range as its largest finite value (odd, and past every narrow type's)."""
    values = np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = values.astype(np.float32)
    if values.dtype.kind in "iu":
        return _integers_odd(values, nearest)
    wide = values.astype(np.float64)
    back = nearest.astype(np.float64)
    inexact = (back != wide) & ~np.isnan(wide) & ~np.isinf(wide)
    away = inexact & (np.abs(back) > np.abs(wide))
    bits = nearest.view(np.uint32) - away.astype(np.uint32)
    return np.where(inexact, bits | np.uint32(1), bits).view(np.float32)


def _integers_odd(values: np.ndarray, nearest: np.ndarray) -> np.ndarray:
    exact = [int(v) for v in values.ravel()]
    back = [int(f) for f in nearest.astype(np.float64).ravel()]
    bits = nearest.view(np.uint32).ravel().copy()
    for i, (want, got) in enumerate(zip(exact, back)):
        if want != got:
            bits[i] = (bits[i] - (abs(got) > abs(want))) | 1
    return bits.reshape(values.shape).view(np.float32)


def round_once(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """`values` (float64, float32 or integers) converted to the narrow float `dtype` with one rounding,
    as a NumPy array of `dtype`'s storage."""
    odd = float32_odd(values) if np.asarray(values).dtype != np.float32 else np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        return odd.astype(numpy_dtype(dtype))


def round_scalar_once(value: float, dtype: DataType) -> float:
    """One Python float rounded once to the narrow float `dtype`, as a float."""
    return float(round_once(np.array([value], np.float64), dtype)[0])
