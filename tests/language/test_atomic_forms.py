"""TileLang's further atomic forms: `T.atomic_addx2` / `x4` (paired and quadrupled adds, element or
sliced), a scalar added into every element of a region, `use_tma=` (accepted, same result), and
`return_prev=` of the paired forms (a vector of the previous values, stored into as many elements; the
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


def paired_prev(form: str, dtype: str = "float32"):
    """TileLang's three spellings of a paired add that gives the previous values (`P[0:2] = ...`)."""

    @T.prim_func
    def k(D: T.Tensor((2,), dtype), V: T.Tensor((2,), dtype), P: T.Tensor((2,), dtype)):
        with T.Kernel(1, threads=1):
            if form == "sliced":
                P[0:2] = T.atomic_addx2(D[0:2], V[0:2], return_prev=True)
            elif form == "let-bound":
                d = D[0:2]
                v = V[0:2]
                P[0:2] = T.atomic_addx2(d, v, return_prev=True)
            else:
                P[0:2] = T.atomic_addx2(D[T.Ramp(0, 1, 2)], V[T.Ramp(0, 1, 2)], return_prev=True)

    return k


@pytest.mark.parametrize("form", ["sliced", "let-bound", "ramp"])
def test_paired_add_gives_the_previous_values(form):
    rng = np.random.default_rng(11)
    d, v = rng.uniform(-4, 4, 2).astype(np.float32), rng.uniform(-4, 4, 2).astype(np.float32)
    want_d, want_p = d.astype(np.float64) + v, d.astype(np.float64)
    p = np.full(2, np.nan, np.float32)
    tilecraft.compile(paired_prev(form), target="c")(d, v, p)
    np.testing.assert_array_equal(p, want_p)
    np.testing.assert_allclose(d, want_d, rtol=1e-6)


def contended_quads(blocks: int, width: int):
    """Every block adds its row of V into the same four counters of D at a ragged offset and keeps what
    it saw: each lane's previous values are the partial sums of one order of the blocks."""

    @T.prim_func
    def k(D: T.Tensor((width,), "int32"), V: T.Tensor((blocks, 4), "int32"), P: T.Tensor((blocks, 4), "int32")):
        with T.Kernel(blocks, threads=1) as bx:
            P[bx, 0:4] = T.atomic_addx4(D[width - 4:width], V[bx, 0:4], return_prev=True)

    return k


def test_quadrupled_adds_under_contention_see_distinct_partial_sums():
    check_contended_quads(lambda f, *a: tilecraft.compile(f, target="c")(*a))


def test_cuda_source_of_paired_previous_values_compiles(tmp_path):
    from tests.transform.helpers import assert_nvcc_compiles

    for func in (paired_prev("ramp"), paired_prev("sliced", "float16"), contended_quads(24, 7)):
        assert "tc_atomic_" in assert_nvcc_compiles(func, tmp_path)


def check_contended_quads(run) -> None:
    blocks, width = 24, 7
    d = np.arange(width, dtype=np.int32) * 1000
    v = np.stack([np.full(4, 1 << b, np.int32) for b in range(blocks)])  # each block's bit: sums are unique
    p = np.full((blocks, 4), -1, np.int32)
    start = d.copy()
    run(contended_quads(blocks, width), d, v, p)
    np.testing.assert_array_equal(d[: width - 4], start[: width - 4])  # the elements before: untouched
    for lane in range(4):
        first, prev = start[width - 4 + lane], p[:, lane].astype(np.int64)
        assert d[width - 4 + lane] == first + (1 << blocks) - 1
        # the blocks' updates in the order they happened: each saw the sum of those before it
        order = np.argsort(prev)
        np.testing.assert_array_equal(prev[order], first + np.concatenate([[0], np.cumsum(v[order, lane])[:-1]]))


def paired_prev_into_one_element():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32"), P: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(4):
                P[i] = T.atomic_addx2(A[i * 2], P[i], return_prev=True)  # <- error

    return k


def test_a_paired_previous_value_stored_into_one_element_is_refused_at_its_line():
    with pytest.raises(ParseError, match="float32x2 value stored at one element of P") as info:
        paired_prev_into_one_element()
    assert_located(info.value, paired_prev_into_one_element)
