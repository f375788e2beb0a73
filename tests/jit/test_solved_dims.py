"""A symbolic dim that only an expression of an input's shape holds (`A: T.Tensor((n * 4,))`, `(n + 1,)`)
is solved from it at the call, as TileLang binds it; outputs may be sized by it; an array no integer
solves is refused with the dim's rule."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError


def solved(out_idx=None):
    n = T.symbolic("n")

    @T.prim_func
    def kernel(A: T.Tensor((n * 4 + 3,), "int32"), B: T.Tensor((n + 1,), "float32")):
        with T.Kernel(1) as _:
            for i in range(n * 4 + 3):
                A[i] = A[i] * 2 + n
            for i in range(n + 1):
                B[i] = T.cast(n * 10 + i, "float32")

    return tilecraft.compile(kernel, target="c", out_idx=out_idx)


@pytest.mark.parametrize("n", [0, 1, 6, 13])
def test_a_dim_given_only_by_an_affine_expression_is_solved(n):
    a0 = np.random.default_rng(n).integers(-50, 50, 4 * n + 3).astype(np.int32)
    a, b = a0.copy(), np.full(n + 1, np.nan, np.float32)
    solved()(a, b)
    np.testing.assert_array_equal(a, a0 * 2 + n)
    np.testing.assert_array_equal(b, n * 10 + np.arange(n + 1))


def test_an_output_is_sized_by_the_solved_dim():
    a0 = np.arange(4 * 5 + 3, dtype=np.int32)
    b = solved(out_idx=[1])(a0.copy())
    np.testing.assert_array_equal(b, 50 + np.arange(6))


@pytest.mark.parametrize("size", [2, 5, 24])  # below 3, and not 3 more than a multiple of 4
def test_a_size_no_integer_dim_gives_is_refused(size):
    with pytest.raises(ArgumentError, match="n \\* 4 \\+ 3.*binds n"):
        solved()(np.zeros(size, np.int32), np.zeros(0, np.float32))  # n + 1 = 0: no dim either
    with pytest.raises(ArgumentError, match="cannot allocate 'B'.*no input provides"):
        solved(out_idx=[1])(np.zeros(size, np.int32))


def test_the_solution_is_checked_against_the_other_arrays():
    with pytest.raises(ArgumentError, match="must be n \\+ 1 = 3, got 4"):
        solved()(np.zeros(11, np.int32), np.zeros(4, np.float32))
