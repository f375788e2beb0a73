"""The views of tests/language/test_tile_views.py lowered for a SIMT target (HIP, gfx942: wave64) and
run in the CPU emulator: a fragment's reshape holds every element in the thread and register that hold
it in the fragment (copies, reductions over groups, writes through the view), shared tiles are read
and written through views of another dtype; a reshape that would move elements between threads is
refused at lowering."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.hip.test_emulated_language_features import hip, run  # noqa: F401 - the fixture
from tests.language import test_tile_views as views
from tilecraft.errors import LoweringError

RNG = np.random.default_rng(31)


def test_shared_tiles_reshaped_both_ways(hip):  # noqa: F811
    rows, cols = 7, 12
    a = RNG.standard_normal(rows * cols).astype(np.float32)
    b, c = views.poisoned((rows, cols), np.float32), views.poisoned(rows * cols, np.float32)
    run(hip, views.shared_reshape(rows, cols), a, b, c)
    ref = a.astype(np.float64) * 2
    np.testing.assert_allclose(b, ref.reshape(rows, cols), rtol=1e-6)
    np.testing.assert_allclose(c, ref + 1, rtol=1e-6)


@pytest.mark.parametrize("rows, cols, threads", [(6, 16, 64), (24, 32, 128)])
def test_fragment_reshaped_to_one_dim(hip, rows, cols, threads):  # noqa: F811
    a = RNG.standard_normal((rows, cols)).astype(np.float32)
    b = views.poisoned(rows * cols, np.float32)
    run(hip, views.fragment_reshape_copy(rows, cols, "float32", threads), a, b)
    np.testing.assert_allclose(b, (a.astype(np.float64) * 3).ravel(), rtol=1e-6)


@pytest.mark.parametrize("rows, groups, group, kind", [(2, 3, 128, "absmax"), (3, 6, 32, "sum")])
def test_reduction_over_groups_of_a_reshaped_fragment(hip, rows, groups, group, kind):  # noqa: F811
    a = RNG.standard_normal((rows, groups * group)).astype(np.float32)
    b = views.poisoned((rows, groups), np.float32)
    run(hip, views.reduce_groups(rows, groups, group, kind), a, b)
    x = a.astype(np.float64).reshape(rows, groups, group)
    ref = np.abs(x).max(axis=2) if kind == "absmax" else x.sum(axis=2)
    np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5)


def test_reduction_over_rows_of_a_flat_fragment(hip):  # noqa: F811
    n, m = 1024, 32
    a = RNG.standard_normal(n).astype(np.float32)
    b = views.poisoned(n // m, np.float32)
    run(hip, views.reduce_rows_of_flat(n, m, threads=64), a, b)
    np.testing.assert_array_equal(b, a.reshape(n // m, m).max(axis=1))


def test_a_nest_over_the_view_writes_the_fragment(hip):  # noqa: F811
    rows, cols = 5, 16
    a = RNG.standard_normal(rows * cols).astype(np.float32)
    b = views.poisoned((rows, cols), np.float32)
    run(hip, views.write_through_fragment_view(rows, cols), a, b)
    np.testing.assert_allclose(b, ((a.astype(np.float64) - 1) * 0.5).reshape(rows, cols), rtol=1e-6)


@pytest.mark.parametrize("dtype, new", [("float16", "float32"), ("int16", "int64")])
def test_shared_tiles_read_and_written_through_views_of_another_dtype(hip, dtype, new):  # noqa: F811
    rows, cols = 9, 16
    a = (RNG.integers(0, 256, rows * cols * np.dtype(dtype).itemsize, dtype=np.uint8) & 0x3F).view(dtype)
    a = a.reshape(rows, cols)
    width = cols * np.dtype(dtype).itemsize // np.dtype(new).itemsize
    b, c = views.poisoned((rows, width), new), views.poisoned((rows, cols), dtype)
    run(hip, views.shared_reinterpret(rows, cols, dtype, new), a, b, c)
    np.testing.assert_array_equal(b.view(np.uint8), a.view(new).view(np.uint8))
    np.testing.assert_array_equal(c.view(np.uint8), a.view(np.uint8))


def test_a_tensor_viewed_as_a_narrower_dtype(hip):  # noqa: F811
    n, m = 6, 8
    a = (RNG.integers(0, 256, n * m * 4, dtype=np.uint8) & 0x3F).view(np.float32)
    b = views.poisoned((n, 2 * m), np.float16)
    run(hip, views.tensor_view(n, m, "float32", "float16"), a, b)
    np.testing.assert_array_equal(b.view(np.uint16), a.view(np.uint16).reshape(n, 2 * m))


def test_a_reshape_that_moves_elements_between_threads_is_refused():
    @T.prim_func
    def k(A: T.Tensor((6, 10), "float32"), B: T.Tensor((60,), "float32")):
        with T.Kernel(1, threads=64):
            frag = T.alloc_fragment((6, 10), "float32")
            T.copy(A, frag)
            flat = T.reshape(frag, [60])  # a dim of 10 inside the merged group
            for i in T.Parallel(60):
                B[i] = flat[i]

    with pytest.raises(LoweringError, match=r"flat, a reshape of fragment frag \(6, 10\) as \(60,\), cannot keep") as info:
        tilecraft.lower(k, target="hip -arch=gfx942")
    assert "a dim of 10 inside such a group is not a power of two" in str(info.value)
    assert "T.copy frag into a shared tile and reshape that" in str(info.value)
