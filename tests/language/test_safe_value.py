"""`T.annotate_safe_value({A: v})`: a load of `A` past its edge reads `v` instead of zero, in T.Parallel
nests and T.copy into shared tiles and fragments; run on the CPU target (and, in
tests/hip/test_emulated_views.py, a SIMT target in the HIP emulator) against NumPy references on
ragged sizes, outputs poisoned first."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import LoweringError, ParseError

RNG = np.random.default_rng(32)


def shifted_tiles(m: int, n: int, block: int, pad, how: str, dtype: str = "float32", shift: int = 10):
    """TileLang's test: each tile reads rows `shift` above its own, so the first rows read past A's edge
    (the tiles' last columns past the right edge too, n not a multiple of the block): through a T.Parallel
    nest, a T.copy into a shared tile, or a T.copy into a fragment."""

    @T.prim_func
    def k(A: T.Tensor((m, n), dtype), B: T.Tensor((m, n), dtype)):
        with T.Kernel(T.ceildiv(n, block), T.ceildiv(m, block), threads=128) as (bx, by):
            T.annotate_safe_value({A: pad})
            if how == "nest":
                tile = T.alloc_shared((block, block), dtype)
                for i, j in T.Parallel(block, block):
                    tile[i, j] = A[by * block + i - shift, bx * block + j]
            elif how == "shared":
                tile = T.alloc_shared((block, block), dtype)
                T.copy(A[by * block - shift, bx * block], tile)
            else:
                tile = T.alloc_fragment((block, block), dtype)
                T.copy(A[by * block - shift, bx * block], tile)
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = tile[i, j]

    return k


def reference(a: np.ndarray, pad, shift: int = 10) -> np.ndarray:
    ref = np.full(a.shape, pad, a.dtype)
    ref[shift:] = a[:-shift]
    return ref


def poisoned(shape, dtype):
    return np.full(shape, np.nan if np.dtype(dtype).kind == "f" else -7, dtype)


@pytest.mark.parametrize("how", ["nest", "shared", "fragment"])
def test_loads_above_the_tensor_read_the_safe_value(how):
    m, n = 77, 45
    a = RNG.standard_normal((m, n)).astype(np.float32)
    b = poisoned((m, n), np.float32)
    tilecraft.compile(shifted_tiles(m, n, 32, 10.5, how), target="c")(a, b)
    np.testing.assert_array_equal(b, reference(a, np.float32(10.5)))


def test_an_integer_safe_value_and_a_float16_tensor():
    m, n = 50, 33
    a = RNG.standard_normal((m, n)).astype(np.float16)
    b = poisoned((m, n), np.float16)
    tilecraft.compile(shifted_tiles(m, n, 32, 3, "shared", "float16"), target="c")(a, b)
    np.testing.assert_array_equal(b, reference(a, np.float16(3)))


def test_the_annotation_prints_and_parses_back():
    text = assert_roundtrip(shifted_tiles(64, 64, 32, -2.25, "nest"))
    assert "T.annotate_safe_value({A: -2.25})" in text


def test_only_global_tensors_take_a_safe_value():
    with pytest.raises(ParseError, match=r"tile is a shared.dyn buffer; only loads of global tensors past"):

        @T.prim_func
        def k(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                tile = T.alloc_shared((64,), "float32")
                T.annotate_safe_value({tile: 1.0})
                T.copy(A, tile)


def test_two_safe_values_for_one_tensor_are_refused():
    @T.prim_func
    def k(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
        with T.Kernel(2, threads=64) as bx:
            T.annotate_safe_value({A: 1.0})
            T.annotate_safe_value({A: 2.0})
            for i in T.Parallel(64):
                B[bx * 64 + i] = A[bx * 64 + i]

    with pytest.raises(LoweringError, match=r"A is given two safe values in one kernel: 1.0 \(line \d+\) and 2.0"):
        tilecraft.lower(k, target="c")


def test_a_copy_into_a_threads_own_array_is_refused():
    @T.prim_func
    def k(A: T.Tensor((100,), "float32"), B: T.Tensor((100,), "float32")):
        with T.Kernel(100, threads=1) as bx:
            T.annotate_safe_value({A: 1.0})
            own = T.alloc_local((4,), "float32")
            T.copy(A[bx : bx + 4], own)
            B[bx] = own[3]

    with pytest.raises(LoweringError, match=r"a T.copy from A, which has a safe value, into own, a thread's own"):
        tilecraft.lower(k, target="c")
