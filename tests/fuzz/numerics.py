"""Dtype facts the references need: NumPy dtypes, integer ranges and wrap-around, rounding errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int32", "int8", "uint8", "int16", "uint16", "int64", "uint32", "uint64")
DTYPES = FLOATS + INTS

_NUMPY = {name: np.dtype(name) for name in DTYPES if name != "bfloat16"}
_NUMPY["bfloat16"] = np.dtype(ml_dtypes.bfloat16)
_NUMPY["bool"] = np.dtype(np.bool_)
_NUMPY["float8_e4m3fn"] = np.dtype(ml_dtypes.float8_e4m3fn)
_NUMPY["float8_e5m2"] = np.dtype(ml_dtypes.float8_e5m2)


def np_dtype(name: str) -> np.dtype:
    return _NUMPY[name]


def is_float(name: str) -> bool:
    return name in FLOATS or name.startswith("float8")


def is_signed(name: str) -> bool:
    return name.startswith("int")


def bits(name: str) -> int:
    return np_dtype(name).itemsize * 8


def int_range(name: str) -> tuple[int, int]:
    info = np.iinfo(np_dtype(name))
    return int(info.min), int(info.max)


def unit_roundoff(name: str) -> float:
    """Half an ulp at 1.0: the relative error of one correctly rounded operation."""
    return float(ml_dtypes.finfo(np_dtype(name)).eps) / 2


def smallest_subnormal(name: str) -> float:
    return float(ml_dtypes.finfo(np_dtype(name)).smallest_subnormal)


def wrap(values: np.ndarray, name: str) -> np.ndarray:
    """Python integers (an object array) reduced modulo 2**bits into `name`'s range, as that dtype."""
    lo, _ = int_range(name)
    span = 1 << bits(name)
    wrapped = [((int(v) - lo) % span) + lo for v in np.asarray(values, dtype=object).ravel()]
    return np.array(wrapped, dtype=object).reshape(np.shape(values)).astype(np_dtype(name))


def sentinel(name: str) -> float | int:
    """The value outputs are poisoned with: NaN for floats, an unlikely odd value for integers."""
    if is_float(name):
        return float("nan")
    lo, hi = int_range(name)
    return hi - 12 if not is_signed(name) else lo + 13


def random_values(rng: np.random.Generator, shape: tuple[int, ...], name: str, scale: float = 2.0):
    """Fresh values, never zero: floats of magnitude in [scale/20, scale], integers over the full range."""
    if is_float(name):
        magnitude = rng.uniform(scale / 20, scale, size=shape)
        values = (magnitude * rng.choice([-1.0, 1.0], size=shape)).astype(np_dtype(name))
        return values
    lo, hi = int_range(name)
    values = rng.integers(lo, hi, size=shape, dtype=np_dtype(name), endpoint=True)
    values[values == 0] = 1
    # The extremes are where wrap-around shows; make sure some appear even in small arrays.
    flat = values.reshape(-1)
    if flat.size >= 8:
        picks = rng.choice(flat.size, size=2, replace=False)
        flat[picks[0]], flat[picks[1]] = lo or 1, hi
    return values
