"""Packed 4-bit parameters at the call boundary (runtime/packed.py): kernels take the bytes (torch
float4_e2m1fn_x2, uint8 or int8, shape (..., ceil(N / 2)), low nibble first) or numpy arrays of ml_dtypes'
4-bit types (packed for the call, unpacked back where written); outputs are allocated as bytes for torch
callers and as ml_dtypes arrays for numpy callers; bad shapes and dtypes are clear errors."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError, ParseError
from tilecraft.runtime.packed import pack, unpack

torch = pytest.importorskip("torch")
FP4 = ml_dtypes.float4_e2m1fn


def _widen(n_dim, fmt="float4_e2m1fn", out_idx=(1,)):
    """Y = float32(Q) for a (m, N) packed Q; N static or symbolic."""
    m = T.dynamic("m")

    @T.prim_func
    def widen(Q: T.Tensor((m, n_dim), fmt), Y: T.Tensor((m, n_dim), "float32")):
        with T.Kernel(T.ceildiv(m, 4), threads=1) as bx:
            for i, j in T.Parallel(4, n_dim):
                if bx * 4 + i < m:
                    Y[bx * 4 + i, j] = T.cast(Q[bx * 4 + i, j], "float32")

    return tilecraft.compile(widen, target="c", out_idx=list(out_idx))


def _narrow(n_dim, fmt="float4_e2m1fn", out_idx=(1,)):
    """Q = X as fmt, element by element (each nibble its own store)."""
    m = T.dynamic("m")

    @T.prim_func
    def narrow(X: T.Tensor((m, n_dim), "float32"), Q: T.Tensor((m, n_dim), fmt)):
        with T.Kernel(T.ceildiv(m, 4), threads=1) as bx:
            for i, j in T.Parallel(4, n_dim):
                if bx * 4 + i < m:
                    Q[bx * 4 + i, j] = X[bx * 4 + i, j]

    return tilecraft.compile(narrow, target="c", out_idx=list(out_idx))


def _values(rng, shape):
    return (rng.standard_normal(shape) * 3).astype(np.float32)


@pytest.mark.parametrize("n", [10, 9])
def test_torch_bytes_in_any_byte_dtype(n):
    rng = np.random.default_rng(n)
    q = _values(rng, (6, n)).astype(FP4)
    packed = torch.from_numpy(pack(q))
    kernel = _widen(n)
    want = q.astype(np.float32)
    for tensor in (packed, packed.view(torch.int8), packed.view(torch.float4_e2m1fn_x2)):
        np.testing.assert_array_equal(kernel(tensor).numpy(), want)


@pytest.mark.parametrize("fmt,torch_dtype", [("float4_e2m1fn", "float4_e2m1fn_x2"), ("int4", "int8"),
                                              ("uint4", "uint8")])  # fmt: skip
@pytest.mark.parametrize("n", [12, 7])
def test_torch_outputs_are_bytes(fmt, torch_dtype, n):
    rng = np.random.default_rng(n)
    x = _values(rng, (5, n))
    if fmt != "float4_e2m1fn":  # values of the integer type (converting others is undefined)
        info = ml_dtypes.iinfo(getattr(ml_dtypes, fmt))
        x = np.clip(np.rint(x), int(info.min), int(info.max))
    q = _narrow(n, fmt)(torch.from_numpy(x))
    assert q.dtype == getattr(torch, torch_dtype) and tuple(q.shape) == (5, (n + 1) // 2)
    want = x.astype(getattr(ml_dtypes, fmt))
    got = unpack(q.view(torch.uint8).numpy(), n, tilecraft.language.dtype(fmt))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_numpy_callers_get_and_give_ml_dtypes_arrays():
    rng = np.random.default_rng(0)
    x = _values(rng, (7, 11))
    q = _narrow(11)(x)  # allocated as ml_dtypes float4_e2m1fn, one value a byte
    assert q.dtype == FP4 and q.shape == (7, 11)
    np.testing.assert_array_equal(q.view(np.uint8), x.astype(FP4).view(np.uint8))
    np.testing.assert_array_equal(_widen(11)(q), q.astype(np.float32))


def test_a_numpy_array_the_kernel_writes_is_unpacked_back():
    rng = np.random.default_rng(1)
    x = _values(rng, (4, 9))
    q = np.zeros((4, 9), FP4)
    _narrow(9, out_idx=())(x, q)
    np.testing.assert_array_equal(q.view(np.uint8), x.astype(FP4).view(np.uint8))


def test_numpy_bytes_are_written_in_place_and_the_padding_nibble_kept():
    rng = np.random.default_rng(2)
    x = _values(rng, (3, 5))
    q = np.full((3, 3), 0xF0, np.uint8)
    _narrow(5, out_idx=())(x, q)
    assert (q[:, -1] >> 4 == 0xF).all()
    np.testing.assert_array_equal(unpack(q, 5, T.float4_e2m1fn).view(np.uint8), x.astype(FP4).view(np.uint8))


def test_a_symbolic_last_dim_is_twice_the_bytes_unless_another_array_says():
    n = T.dynamic("n")
    m = T.dynamic("m")

    @T.prim_func
    def scale(
        Q: T.Tensor((m, n), "float4_e2m1fn"), X: T.Tensor((m, n), "float32"), Y: T.Tensor((m, n), "float32")
    ):
        with T.Kernel(m, threads=1) as bx:
            for j in T.serial(n):
                Y[bx, j] = T.cast(Q[bx, j], "float32") * X[bx, j]

    kernel = tilecraft.compile(scale, target="c", out_idx=[2])
    rng = np.random.default_rng(3)
    for cols in (8, 7):  # X says n; Q holds ceil(n / 2) bytes either way
        q = _values(rng, (3, cols)).astype(FP4)
        x = _values(rng, (3, cols))
        y = kernel(torch.from_numpy(pack(q)), torch.from_numpy(x))
        np.testing.assert_array_equal(y.numpy(), q.astype(np.float32) * x)
    with pytest.raises(ArgumentError, match=r"rows of 9 packed 4-bit values take 5 bytes, got 4"):
        kernel(torch.from_numpy(pack(np.zeros((3, 8), FP4))), torch.zeros(3, 9))

    widen = _widen(T.dynamic("n"))
    q = _values(rng, (2, 6)).astype(FP4)
    assert tuple(widen(torch.from_numpy(pack(q))).shape) == (2, 6)


def test_bad_packed_arguments_are_clear_errors():
    kernel = _widen(10)
    with pytest.raises(ArgumentError, match=r"rows of 10 packed 4-bit values take 5 bytes, got 6"):
        kernel(torch.zeros((2, 6), dtype=torch.uint8))
    with pytest.raises(ArgumentError, match=r"expected packed float4_e2m1fn data .* got torch float32"):
        kernel(torch.zeros((2, 10)))
    with pytest.raises(ArgumentError, match=r"must be contiguous along the last dim"):
        kernel(torch.zeros((2, 10), dtype=torch.uint8)[:, ::2])
    with pytest.raises(ArgumentError, match=r"expected 2 dims"):
        kernel(torch.zeros((10,), dtype=torch.uint8))


def test_strided_packed_rows():
    m, n = T.dynamic("m"), 6
    sm = T.dynamic("sm")

    @T.prim_func
    def widen(Q: T.StridedTensor((m, n), (sm, 1), "float4_e2m1fn"), Y: T.Tensor((m, n), "float32")):
        with T.Kernel(m, threads=1) as bx:
            for j in T.serial(n):
                Y[bx, j] = T.cast(Q[bx, j], "float32")

    kernel = tilecraft.compile(widen, target="c", out_idx=[1])
    q = _values(np.random.default_rng(4), (4, 10)).astype(FP4)
    wide = torch.from_numpy(pack(q))  # rows of 5 bytes; the kernel reads the first 3 of each
    np.testing.assert_array_equal(kernel(wide[:, :3]).numpy(), q[:, :6].astype(np.float32))


def test_packed_kernels_take_the_full_path_quietly():
    """No fast path or compiled plan reads packed bytes; the fallback must not warn on every kernel."""
    kernel = _narrow(8)
    x = torch.from_numpy(_values(np.random.default_rng(5), (4, 8)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            q = kernel(x)
    assert q.dtype == torch.float4_e2m1fn_x2


def test_float6_and_e8m0_take_uint8_bytes():
    @T.prim_func
    def widen(
        A: T.Tensor((8,), "float6_e3m2fn"), B: T.Tensor((8,), "float8_e8m0fnu"), Y: T.Tensor((8,), "float32")
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(8):
                Y[i] = T.cast(A[i], "float32") * T.cast(B[i], "float32")

    kernel = tilecraft.compile(widen, target="c", out_idx=[2])
    a = np.arange(8, dtype=np.float32).astype(ml_dtypes.float6_e3m2fn)
    b = (2.0 ** np.arange(-4, 4)).astype(np.float32).astype(ml_dtypes.float8_e8m0fnu)
    want = a.astype(np.float32) * b.astype(np.float32)
    np.testing.assert_array_equal(kernel(a, b), want)
    got = kernel(torch.from_numpy(a.view(np.uint8)), torch.from_numpy(b.view(np.uint8)))
    np.testing.assert_array_equal(got.numpy(), want)


def test_custom_op_fake_gives_packed_outputs_their_bytes():
    import tilecraft.torch as tctorch

    op = tctorch.custom_op(_narrow(T.dynamic("n")), name="subbyte_test::narrow")
    x = torch.randn(3, 7)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        out = op(mode.from_tensor(x))
    assert tuple(out.shape) == (3, 4) and out.dtype == torch.float4_e2m1fn_x2
    real = op(x)
    np.testing.assert_array_equal(
        unpack(real.view(torch.uint8).numpy(), 7, T.float4_e2m1fn).view(np.uint8),
        x.numpy().astype(FP4).view(np.uint8),
    )


def test_eager_jit_symbols_from_packed_tensors():
    @tilecraft.jit(target="c")
    def widen(q):
        m, n = T.const("m"), T.const("n")
        q: T.Tensor((m, n), "float4_e2m1fn")
        y = T.empty((m, n), "float32")
        with T.Kernel(m, threads=1) as bx:
            for j in T.serial(n):
                y[bx, j] = T.cast(q[bx, j], "float32")
        return y

    q = _values(np.random.default_rng(6), (3, 8)).astype(FP4)
    np.testing.assert_array_equal(widen(torch.from_numpy(pack(q))).numpy(), q.astype(np.float32))


def test_subscripted_strided_annotations_of_packed_rows():
    """`x: T.StridedTensor[shape, strides, dtype]` and `T.Tensor[shape, dtype]` in a kernel's body
    (TileLang's subtype tests): packed fp4 rows with a symbolic stride, a ragged row count, and an
    output poisoned before the run."""

    @tilecraft.jit(target="c")
    def widen(q, y):
        m, s = T.dynamic("m"), T.dynamic("s")
        q: T.StridedTensor[[m, 6], [s, 1], T.float4_e2m1fn]
        y: T.Tensor[(m, 6), T.float32]
        with T.Kernel(m, threads=1) as bx:
            for j in T.serial(6):
                y[bx, j] = T.cast(q[bx, j], "float32") * 2.0

    q = _values(np.random.default_rng(7), (5, 10)).astype(FP4)
    wide = torch.from_numpy(pack(q))  # rows of 5 bytes; the kernel reads the first 3 of each
    y = torch.full((5, 6), float("nan"))
    widen(wide[:, :3], y)
    np.testing.assert_array_equal(y.numpy(), q[:, :6].astype(np.float64) * 2.0)


def test_a_strided_annotation_subscripted_with_two_parts_is_located():
    with pytest.raises(ParseError, match=r"T.StridedTensor\[\[M, N\], \[stride_m, stride_n\], dtype\]") as err:

        @T.prim_func
        def bad(A: T.StridedTensor[(4, 4), T.float32]):
            with T.Kernel(1, threads=1):
                pass

    assert "test_packed_args.py" in str(err.value)
