"""`nan_propagate=` of T.reduce_max / reduce_min / reduce_absmax: True is what tilecraft's reductions do
(a NaN element gives NaN), False is refused at its line."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_located
from tilecraft.errors import ParseError

REDUCE = {"max": T.reduce_max, "min": T.reduce_min, "absmax": T.reduce_absmax}


def row_reduce(m: int, n: int, kind: str):
    reduce = REDUCE[kind]

    @T.prim_func
    def kernel(A: T.Tensor((m, n), "float32"), B: T.Tensor((m,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((m, n), "float32")
            b = T.alloc_fragment((m,), "float32")
            T.copy(A, a)
            reduce(a, b, dim=1, nan_propagate=True)
            T.copy(b, B)

    return kernel


@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
def test_nan_propagate_true_gives_nan_for_a_nan_row(kind):
    m, n = 11, 29
    rng = np.random.default_rng(31)
    a = rng.standard_normal((m, n)).astype(np.float32)
    a[2, 5] = a[7, 0] = np.nan
    b = np.full(m, 12345.0, np.float32)
    tilecraft.compile(row_reduce(m, n, kind), target="c")(a, b)
    x = a.astype(np.float64)
    ref = {"max": x.max(1), "min": x.min(1), "absmax": np.abs(x).max(1)}[kind]
    np.testing.assert_allclose(b, ref, rtol=1e-6)
    assert np.isnan(b[[2, 7]]).all()


def nan_ignoring():
    @T.prim_func
    def k(A: T.Tensor((8, 8), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            a = T.alloc_fragment((8, 8), "float32")
            b = T.alloc_fragment((8,), "float32")
            T.copy(A, a)
            T.reduce_max(a, b, dim=1, nan_propagate=False)  # <- error
            T.copy(b, B)

    return k


def test_nan_propagate_false_is_refused_at_its_line():
    with pytest.raises(ParseError, match="nan_propagate=False. is not supported") as info:
        nan_ignoring()
    assert_located(info.value, nan_ignoring)
