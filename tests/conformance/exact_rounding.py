"""The nearest value of a narrow float type, computed from the table of all its values in exact
arithmetic (Python integers and fractions), as a reference that does not depend on the installed
ml_dtypes: versions before its double-rounding fix convert float64 and wide integers through float32."""

from __future__ import annotations

import functools
from fractions import Fraction

import ml_dtypes
import numpy as np


def storage(name: str) -> np.dtype:
    return np.dtype(name) if name == "float16" else np.dtype(getattr(ml_dtypes, name))


def _codes_and_values(name: str) -> tuple[np.ndarray, np.ndarray]:
    narrow = storage(name)
    width = np.uint16 if narrow.itemsize == 2 else np.uint8
    codes = np.arange(2 ** (8 * narrow.itemsize), dtype=np.uint32).astype(width)
    with np.errstate(invalid="ignore"):
        return codes, codes.view(narrow).astype(np.float64)


@functools.cache
def _finite_table(name: str) -> tuple[list[Fraction], np.ndarray, dict[float, int]]:
    """Every finite non-negative value of `name` in increasing order, its code (the first code of a
    value stored twice, as the narrow 4- and 6-bit types are in a byte), and the code of each negative
    value by its magnitude."""
    codes, values = _codes_and_values(name)
    finite = np.isfinite(values)
    positive = finite & ~np.signbit(values)
    _, first = np.unique(values[positive], return_index=True)
    negative = {}
    for code, value in zip(codes[finite & np.signbit(values)], values[finite & np.signbit(values)]):
        negative.setdefault(-float(value), int(code))
    kept = codes[positive][first]
    return [Fraction(float(v)) for v in values[positive][first]], kept, negative


def nearest_codes(x, name: str) -> np.ndarray:
    """The codes of `x` (finite float64 values or Python/NumPy integers inside `name`'s finite range)
    rounded to nearest, ties to the even code."""
    table, codes, negative = _finite_table(name)
    value_of = {int(c): float(v) for c, v in zip(codes, table)}
    out = np.empty(len(x), codes.dtype)
    for i, v in enumerate(x):
        exact = Fraction(int(v)) if isinstance(v, (int, np.integer)) else Fraction(float(v))
        code = _nearest(abs(exact), table, codes)
        out[i] = negative[value_of[code]] if exact < 0 else code
    return out


def _nearest(a: Fraction, table: list[Fraction], codes: np.ndarray) -> int:
    import bisect

    hi = bisect.bisect_left(table, a)
    if hi == len(table):
        raise ValueError(f"{float(a)} is past the type's largest finite value")
    if table[hi] == a or hi == 0:
        return int(codes[hi])
    lo = hi - 1
    below, above = a - table[lo], table[hi] - a
    if below != above:
        return int(codes[lo] if below < above else codes[hi])
    return int(codes[lo] if codes[lo] % 2 == 0 else codes[hi])


def nearest(x, name: str) -> np.ndarray:
    """`x` rounded to nearest as an array of `name`."""
    return nearest_codes(x, name).view(storage(name))
