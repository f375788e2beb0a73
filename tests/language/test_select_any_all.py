"""`T.any_of` / `T.all_of` of a row or slice, `T.Select`, `T.align_up`, against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_located
from tilecraft.errors import ParseError


def predicates(rows: int, cols: int):
    @T.prim_func
    def kernel(
        M: T.Tensor((rows, cols), "bool"),
        F: T.Tensor((rows, cols), "float32"),
        Out: T.Tensor((rows, 5), "int32"),
        a: T.int32,
    ):
        with T.Kernel(rows, threads=32) as r:
            Out[r, 0] = T.Select(T.any_of(M[r, :]), 1, 0)
            Out[r, 1] = T.Select(T.all_of(M[r, 0:cols]), 1, 0)
            Out[r, 2] = T.Select(T.any_of(F[r, 2:5]), 1, 0)
            Out[r, 3] = T.align_up(a + r, 8)
            Out[r, 4] = T.Select(F[r, 0] > 0.5, T.cast(F[r, 1] * 100.0, "int32"), -1)

    return kernel


def test_predicates_on_random_rows():
    rows, cols = 9, 7
    rng = np.random.default_rng(21)
    m = rng.random((rows, cols)) < 0.2
    m[3], m[4] = True, False
    f = np.where(rng.random((rows, cols)) < 0.3, rng.random((rows, cols)), 0).astype(np.float32)
    f[:, 0] = rng.random(rows)
    o = np.full((rows, 5), -99, np.int32)
    a = int(rng.integers(-40, 40))
    tilecraft.compile(predicates(rows, cols), target="c")(m, f, o, a)
    r = np.arange(rows)
    ref = np.stack(
        [
            m.any(1),
            m.all(1),
            (f[:, 2:5] != 0).any(1),
            -(-(a + r) // 8) * 8,
            np.where(f[:, 0] > 0.5, (f[:, 1].astype(np.float64) * 100.0).astype(np.int32), -1),
        ],
        axis=1,
    )
    np.testing.assert_array_equal(o, ref)


def test_align_up_of_python_ints():
    assert [T.align_up(x, 32) for x in (-33, -1, 0, 1, 32, 33)] == [-32, 0, 0, 32, 32, 64]


def any_of_a_start_index():
    @T.prim_func
    def k(M: T.Tensor((4, 8), "bool"), Out: T.Tensor((4,), "int32")):
        with T.Kernel(4, threads=32) as r:
            Out[r] = T.Select(T.any_of(M[r, 0]), 1, 0)  # <- error

    return k


def test_any_of_needs_a_region():
    with pytest.raises(ParseError, match="T.any_of takes a buffer or a region") as info:
        any_of_a_start_index()
    assert_located(info.value, any_of_a_start_index)
