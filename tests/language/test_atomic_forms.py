"""TileLang's further atomic forms: `T.atomic_addx2` / `x4` (paired and quadrupled adds, element or
sliced), a scalar added into every element of a region, `use_tma=` (accepted, same result), and
`return_prev=` of the paired forms (refused at its line; the
element forms' is tests/language/test_atomic_expressions.py); against float64 NumPy references, outputs poisoned before."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_located
from tilecraft.errors import ParseError


def lanes_add(m: int, n: int, block: int, lanes: int, sliced: bool):
    add = T.atomic_addx2 if lanes == 2 else T.atomic_addx4

    @T.prim_func
    def kernel(A: T.Tensor((m, n), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, block), threads=32) as bx:
            for i, j in T.Parallel(block, n // lanes):
                row = bx * block + i
                if row < m:
                    if sliced:
                        add(B[row, j * lanes : j * lanes + lanes], A[row, j * lanes : j * lanes + lanes])
                    else:
                        add(B[row, j * lanes], A[row, j * lanes])

    return kernel


@pytest.mark.parametrize("lanes, sliced", [(2, False), (4, False), (4, True)])
def test_paired_adds_add_each_element_once(lanes, sliced):
    m, n = 37, 24
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, n)).astype(np.float32)
    b = rng.standard_normal((m, n)).astype(np.float32)
    ref = b.astype(np.float64) + a
    tilecraft.compile(lanes_add(m, n, 16, lanes, sliced), target="c")(a, b)
    np.testing.assert_allclose(b, ref, rtol=1e-6, atol=1e-6)


def scalar_into_region(m: int, n: int, block: int):
    """A scalar added into A's tiles and max-ed into C's (two buffers: a thread's atomic on an element
    is not ordered with another thread's on the same element)."""

    @T.prim_func
    def kernel(A: T.Tensor((m, n), "float32"), C: T.Tensor((m, n), "float32"), S: T.Tensor((1,), "float32")):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=64) as (bx, by):
            T.atomic_add(A[by * block : (by + 1) * block, bx * block : (bx + 1) * block], S[0] * 2.0)
            T.atomic_max(C[by * block : (by + 1) * block, bx * block : (bx + 1) * block], 0.25)

    return kernel


def test_a_scalar_into_every_element_of_a_ragged_region():
    m, n = 45, 37
    rng = np.random.default_rng(12)
    a, c = rng.standard_normal((2, m, n)).astype(np.float32)
    s = rng.standard_normal(1).astype(np.float32)
    ref_a, ref_c = a.astype(np.float64) + 2.0 * s[0], np.maximum(c.astype(np.float64), 0.25)
    tilecraft.compile(scalar_into_region(m, n, 16), target="c")(a, c, s)
    np.testing.assert_allclose(a, ref_a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c, ref_c, rtol=1e-6, atol=1e-6)


def tma_reduction(m: int, n: int):
    @T.prim_func
    def kernel(A: T.Tensor((4, m, n), "float32"), Out: T.Tensor((m, n), "float32")):
        with T.Kernel(4, threads=64) as k:
            tile = T.alloc_shared((m, n), "float32")
            T.copy(A[k, 0:m, 0:n], tile)
            T.atomic_add(Out, tile, use_tma=True)

    return kernel


def test_use_tma_gives_the_same_sums():
    m, n = 19, 33
    rng = np.random.default_rng(13)
    a = rng.standard_normal((4, m, n)).astype(np.float32)
    out = rng.standard_normal((m, n)).astype(np.float32)
    ref = out.astype(np.float64) + a.astype(np.float64).sum(0)
    tilecraft.compile(tma_reduction(m, n), target="c")(a, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def return_prev():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), P: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(8):
                P[i] = T.atomic_addx2(A[i], P[i], return_prev=True)  # <- error

    return k


def test_return_prev_is_refused_at_its_line():
    with pytest.raises(ParseError, match="return_prev=True. is not supported") as info:
        return_prev()
    assert_located(info.value, return_prev)
