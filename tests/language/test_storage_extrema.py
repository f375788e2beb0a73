"""`T.max`, `T.min` and `T.clamp` of float8 operands (a storage format): compared in float32 and cast
back, which is exact (the result is one of the operands); run on the CPU target against NumPy with
ml_dtypes on ragged sizes, outputs poisoned first."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilecraft
import tilecraft.language as T

RNG = np.random.default_rng(35)
OPS = {
    "max": lambda a, b, dtype: T.max(a, b),
    "min": lambda a, b, dtype: T.min(a, b),
    "clamp": lambda a, b, dtype: T.clamp(a, T.cast(-1.5, dtype), b),
}


def elementwise(n: int, block: int, dtype: str, op: str):
    @T.prim_func
    def k(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = OPS[op](A[bx * block + i], B[bx * block + i], dtype)

    return k


def reference(a: np.ndarray, b: np.ndarray, op: str) -> np.ndarray:
    x, y = a.astype(np.float64), b.astype(np.float64)
    if op == "max":
        return np.maximum(x, y)
    if op == "min":
        return np.minimum(x, y)
    return np.minimum(np.maximum(x, -1.5), y)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("op", list(OPS))
def test_float8_extrema_are_exact(dtype, op):
    n = 333
    np_dtype = getattr(ml_dtypes, dtype)
    a = (RNG.standard_normal(n) * 3).astype(np_dtype)
    b = (RNG.standard_normal(n) * 3).astype(np_dtype)
    c = np.full(n, np.nan, np_dtype)
    tilecraft.compile(elementwise(n, 128, dtype, op), target="c")(a, b, c)
    np.testing.assert_array_equal(c.astype(np.float64), reference(a, b, op))


def test_the_comparison_is_in_float32():
    text = elementwise(8, 8, "float8_e4m3fn", "max").script()
    compared = 'T.max(T.cast(A[bx * 8 + i], "float32"), T.cast(B[bx * 8 + i], "float32"))'
    assert f'C[bx * 8 + i] = T.cast({compared}, "float8_e4m3fn")' in text
