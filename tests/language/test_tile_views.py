"""`T.reshape` and `T.view` of shared tiles, fragments, local arrays and tensors, and views of another
dtype: each kernel run on the CPU target against a float64 (or bit-exact) NumPy reference on fresh
random inputs of ragged sizes, outputs poisoned first. The same kernels run on a SIMT target in the
HIP emulator (tests/hip/test_emulated_views.py), where a fragment's view must hold every element in the
thread and register that hold it in the fragment."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import LoweringError, ParseAssertionError

RNG = np.random.default_rng(30)


def run(func, *arrays):
    tilecraft.compile(func, target="c")(*arrays)


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    out.view(np.uint8)[...] = 0xFF  # NaN for floats, -1 for integers: never a right answer
    return out


# ------------------------------------------------------------------------------------ kernels


def shared_reshape(rows: int, cols: int, dtype: str = "float32"):
    """A 1-D shared tile filled element by element, copied out as (rows, cols), and a 2-D one as 1-D."""

    @T.prim_func
    def k(A: T.Tensor((rows * cols,), dtype), B: T.Tensor((rows, cols), dtype), C: T.Tensor((rows * cols,), dtype)):
        with T.Kernel(1, threads=64):
            flat = T.alloc_shared((rows * cols,), dtype)
            for i in T.Parallel(rows * cols):
                flat[i] = A[i] * 2
            T.copy(T.reshape(flat, (rows, cols)), B)
            tile = T.alloc_shared((rows, cols), dtype)
            T.copy(B, tile)
            line = T.reshape(tile, [rows * cols])
            for i in T.Parallel(rows * cols):
                C[i] = line[i] + 1

    return k


def fragment_reshape_copy(rows: int, cols: int, dtype: str = "float32", threads: int = 32):
    """TileLang's reshape of a fragment copied to a shared tile (`T.copy(T.reshape(F, [N]), S)`)."""
    n = rows * cols

    @T.prim_func
    def k(A: T.Tensor((rows, cols), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=threads):
            tile = T.alloc_shared((rows, cols), dtype)
            frag = T.alloc_fragment((rows, cols), dtype)
            out = T.alloc_shared((n,), dtype)
            T.copy(A, tile)
            T.copy(tile, frag)
            for i, j in T.Parallel(rows, cols):
                frag[i, j] = frag[i, j] * 3
            T.copy(T.reshape(frag, [n]), out)
            T.copy(out, B)

    return k


def reduce_groups(rows: int, groups: int, group: int, kind: str, threads: int = 128):
    """A row reshaped into groups (`(rows, groups * group)` as `(rows, groups, group)`) and reduced over
    each group, the view taken before the fragment is written (TileLang's 3-D absmax test)."""

    @T.prim_func
    def k(A: T.Tensor((rows, groups * group), "float32"), B: T.Tensor((rows, groups), "float32")):
        with T.Kernel(1, threads=threads):
            frag = T.alloc_fragment((rows, groups * group), "float32")
            grouped = T.reshape(frag, [rows, groups, group])
            out = T.alloc_fragment((rows, groups), "float32")
            T.copy(A, frag)
            if kind == "absmax":
                T.reduce_absmax(grouped, out, dim=2)
            else:
                T.reduce_sum(grouped, out, dim=2)
            T.copy(out, B)

    return k


def reduce_rows_of_flat(n: int, m: int, threads: int = 32):
    """A 1-D fragment reduced as rows of `m` (TileLang's reduce after reshape)."""

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n // m,), "float32")):
        with T.Kernel(1, threads=threads):
            frag = T.alloc_fragment((n,), "float32")
            out = T.alloc_fragment((n // m,), "float32")
            T.copy(A, frag)
            T.reduce_max(T.reshape(frag, [n // m, m]), out, dim=1)
            T.copy(out, B)

    return k


def write_through_fragment_view(rows: int, cols: int, threads: int = 64):
    """A T.Parallel nest over the view writes the fragment: the same registers under both names."""
    n = rows * cols

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((rows, cols), "float32")):
        with T.Kernel(1, threads=threads):
            frag = T.alloc_fragment((rows, cols), "float32")
            flat = T.reshape(frag, [n])
            for i in T.Parallel(n):
                flat[i] = A[i] - 1
            for i, j in T.Parallel(rows, cols):
                frag[i, j] = frag[i, j] * 0.5
            T.copy(frag, B)

    return k


def tensor_view(n: int, m: int, dtype: str, new: str):
    """TileLang's `T.view(A, shape, dtype=...)` of a kernel parameter: A's bytes as another dtype."""
    width = m * T.dtype(dtype).bits // T.dtype(new).bits

    @T.prim_func
    def k(A: T.Tensor((n * m,), dtype), B: T.Tensor((n, width), new)):
        with T.Kernel(1):
            T.copy(T.view(A, [n, width], dtype=new), B)

    return k


def shared_reinterpret(rows: int, cols: int, dtype: str, new: str):
    """A shared tile read through a view of another dtype, and a second one written through one (a
    store through a wider view writes every element it covers)."""
    width = cols * T.dtype(dtype).bits // T.dtype(new).bits

    @T.prim_func
    def k(A: T.Tensor((rows, cols), dtype), B: T.Tensor((rows, width), new), C: T.Tensor((rows, cols), dtype)):
        with T.Kernel(1, threads=128):
            tile = T.alloc_shared((rows, cols), dtype)
            T.copy(A, tile)
            T.copy(T.view(tile, (rows, width), dtype=new), B)
            back = T.alloc_shared((rows, cols), dtype)
            T.copy(B, T.view(back, (rows, width), dtype=new))
            T.copy(back, C)

    return k


def local_view(n: int):
    """A thread's own array viewed as pairs of int16 of each int32 (a view of a T.alloc_local array)."""

    @T.prim_func
    def k(A: T.Tensor((n, 4), "int32"), B: T.Tensor((n, 8), "int16")):
        with T.Kernel(n, threads=1) as bx:
            words = T.alloc_local((4,), "int32")
            for i in T.serial(4):
                words[i] = A[bx, i]
            halves = T.view(words, (8,), dtype="int16")
            for i in T.serial(8):
                B[bx, i] = halves[i]

    return k


# ------------------------------------------------------------------------------------ tests


def test_shared_tiles_reshaped_both_ways():
    rows, cols = 7, 12
    a = RNG.standard_normal(rows * cols).astype(np.float32)
    b, c = poisoned((rows, cols), np.float32), poisoned(rows * cols, np.float32)
    run(shared_reshape(rows, cols), a, b, c)
    ref = a.astype(np.float64) * 2
    np.testing.assert_allclose(b, ref.reshape(rows, cols), rtol=1e-6)
    np.testing.assert_allclose(c, ref + 1, rtol=1e-6)


@pytest.mark.parametrize("rows, cols, dtype", [(6, 16, "float32"), (10, 8, "float16")])
def test_fragment_reshaped_to_one_dim(rows, cols, dtype):
    a = RNG.standard_normal((rows, cols)).astype(dtype)
    b = poisoned(rows * cols, dtype)
    run(fragment_reshape_copy(rows, cols, dtype), a, b)
    np.testing.assert_allclose(b, (a.astype(np.float64) * 3).ravel(), rtol=2e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("rows, groups, group, kind", [(2, 3, 128, "absmax"), (3, 6, 32, "sum")])
def test_reduction_over_groups_of_a_reshaped_fragment(rows, groups, group, kind):
    a = RNG.standard_normal((rows, groups * group)).astype(np.float32)
    b = poisoned((rows, groups), np.float32)
    run(reduce_groups(rows, groups, group, kind), a, b)
    x = a.astype(np.float64).reshape(rows, groups, group)
    ref = np.abs(x).max(axis=2) if kind == "absmax" else x.sum(axis=2)
    np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5)


def test_reduction_over_rows_of_a_flat_fragment():
    n, m = 96 * 8, 32
    a = RNG.standard_normal(n).astype(np.float32)
    b = poisoned(n // m, np.float32)
    run(reduce_rows_of_flat(n, m), a, b)
    np.testing.assert_array_equal(b, a.reshape(n // m, m).max(axis=1))


def test_a_nest_over_the_view_writes_the_fragment():
    rows, cols = 5, 16
    a = RNG.standard_normal(rows * cols).astype(np.float32)
    b = poisoned((rows, cols), np.float32)
    run(write_through_fragment_view(rows, cols), a, b)
    np.testing.assert_allclose(b, ((a.astype(np.float64) - 1) * 0.5).reshape(rows, cols), rtol=1e-6)


@pytest.mark.parametrize("dtype, new", [("float32", "float16"), ("float16", "float32"), ("float64", "int16"),
                                        ("int8", "int32"), ("float32", "float32")])  # fmt: skip
def test_a_tensor_viewed_as_another_dtype_reads_its_bytes(dtype, new):
    n, m = 6, 8  # 8 elements a row: whole elements of both dtypes
    # random bytes below 0x40: no float's exponent is all ones (no NaN, whose payload a copy may not keep)
    a = (RNG.integers(0, 256, n * m * np.dtype(dtype).itemsize, dtype=np.uint8) & 0x3F).view(dtype)
    width = m * np.dtype(dtype).itemsize // np.dtype(new).itemsize
    b = poisoned((n, width), new)
    run(tensor_view(n, m, dtype, new), a, b)
    expected = a.view(new).reshape(n, width)
    np.testing.assert_array_equal(b.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("dtype, new", [("float32", "float16"), ("float16", "float32"), ("int16", "int64")])
def test_shared_tiles_read_and_written_through_views_of_another_dtype(dtype, new):
    rows, cols = 9, 16
    a = RNG.standard_normal((rows, cols)).astype(dtype) if dtype != "int16" else RNG.integers(
        -30000, 30000, (rows, cols)).astype(dtype)  # fmt: skip
    width = cols * np.dtype(dtype).itemsize // np.dtype(new).itemsize
    b, c = poisoned((rows, width), new), poisoned((rows, cols), dtype)
    if dtype == "float32" and new == "float16":
        with pytest.raises(LoweringError, match=r"a store through .*, a float16 view of .* \(float32\), would rewrite"):
            run(shared_reinterpret(rows, cols, dtype, new), a, b, c)
        return
    run(shared_reinterpret(rows, cols, dtype, new), a, b, c)
    np.testing.assert_array_equal(b.view(np.uint8), a.view(new).view(np.uint8))
    np.testing.assert_array_equal(c, a)


def test_a_local_array_viewed_as_narrower_integers():
    n = 5
    a = RNG.integers(-(2**31), 2**31 - 1, (n, 4)).astype(np.int32)
    b = poisoned((n, 8), np.int16)
    run(local_view(n), a, b)
    np.testing.assert_array_equal(b, a.view(np.int16))


def test_tilelang_reshape_of_a_tensor_parameter():
    n, m = 96, 12

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n // m, m), "float32")):
        with T.Kernel(1):
            T.copy(T.reshape(A, [n // m, m]), B)

    a, b = RNG.standard_normal(n).astype(np.float32), poisoned((n // m, m), np.float32)
    run(k, a, b)
    np.testing.assert_array_equal(b, a.reshape(n // m, m))


def test_view_without_a_shape_keeps_the_shape():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32"), B: T.Tensor((4, 8), "int32")):
        with T.Kernel(1):
            T.copy(T.view(A, dtype="int32"), B)

    a, b = RNG.standard_normal((4, 8)).astype(np.float32), poisoned((4, 8), np.int32)
    run(k, a, b)
    np.testing.assert_array_equal(b, a.view(np.int32))


@pytest.mark.parametrize("make", [lambda: T.reshape, lambda: T.view])
def test_a_reshape_to_another_size_is_an_assertion_error(make):
    fn = make()
    with pytest.raises(AssertionError) as info:

        @T.prim_func
        def k(A: T.Tensor((1024,), "float32"), B: T.Tensor((32, 33), "float32")):
            with T.Kernel(1):
                T.copy(fn(A, [32, 33]), B)

    assert isinstance(info.value, ParseAssertionError)
    assert "the view holds 1056 elements but A holds 1024" in str(info.value)


def test_on_chip_views_print_inside_the_kernel_and_parse_back():
    text = assert_roundtrip(shared_reshape(3, 8))
    assert "T.Tensor((3, 8), \"float32\", flat.data)" in text
    assert_roundtrip(reduce_groups(2, 3, 32, "sum"))
    assert_roundtrip(shared_reinterpret(4, 8, "float16", "float32"))


def test_a_narrower_store_through_a_view_of_a_tensor_is_refused():
    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        with T.Kernel(1):
            halves = T.view(A, [16], dtype="float16")
            for i in T.Parallel(16):
                halves[i] = 0  # <- error

    with pytest.raises(LoweringError, match=r"a store through halves, a float16 view of A \(float32\)") as info:
        tilecraft.lower(k, target="c")
    assert "write A itself" in str(info.value)
