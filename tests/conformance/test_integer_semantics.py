"""Integer arithmetic on data wraps around at its declared width, exactly as NumPy computes it, on
every backend; math on Python numbers follows the dtype it meets (docs/language.md, "Integer
arithmetic" and "Math functions")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tilecraft.language as T
from tilecraft.ir import expr as E

N, BLOCK = 1000, 256  # ragged: the last block is partial


def _unary_kernel(dtype: str, body):
    @T.prim_func
    def unary(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    Y[bx * BLOCK + i] = body(X[bx * BLOCK + i])

    return unary


def _binary_kernel(dtype: str, body):
    @T.prim_func
    def binary(X: T.Tensor((N,), dtype), Z: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    Y[bx * BLOCK + i] = body(X[bx * BLOCK + i], Z[bx * BLOCK + i])

    return binary


def _ints(rng, dtype, low=None, high=None):
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    x = rng.integers(low, high, size=N, endpoint=True, dtype=dtype)
    x[:4] = [info.min, info.max, 0, 3] if info.min < 0 else [0, info.max, 1, 3]  # the edges, every time
    return x


def _numpy(fn, *xs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*xs)


UNARY = [
    ("uint8_sub_floordiv", "uint8", lambda x: (x - 7) // 2, lambda x: (x - np.uint8(7)) // np.uint8(2)),
    ("int8_square_max", "int8", lambda x: T.max(x * x, 0), lambda x: np.maximum(x * x, np.int8(0))),
    ("int8_negate_abs", "int8", lambda x: T.abs(-x), lambda x: np.abs(-x)),
    ("uint8_invert", "uint8", lambda x: ~x, lambda x: ~x),
    ("uint16_square", "uint16", lambda x: x * x, lambda x: x * x),
    ("int16_shift_add", "int16", lambda x: (x << 3) + 1000, lambda x: (x << np.int16(3)) + np.int16(1000)),
    ("int32_add_overflows", "int32", lambda x: x + 2**30, lambda x: x + np.int32(2**30)),
    ("int32_shift_negative", "int32", lambda x: x << 4, lambda x: x << np.int32(4)),
    ("int64_mul_overflows", "int64", lambda x: x * 3 + 1, lambda x: x * np.int64(3) + np.int64(1)),
    (
        "uint16_narrowing_cast_floordiv",
        "uint16",
        lambda x: T.cast(T.cast(x, "int8") // 2, "uint16"),
        lambda x: (x.astype(np.int8) // np.int8(2)).astype(np.uint16),
    ),
    (
        "uint8_folded_constant_wraps",
        "uint8",
        lambda x: T.max(T.uint8(1) - T.uint8(2), x),
        lambda x: np.maximum(np.uint8(255), x),
    ),
    (
        "int8_folded_negation_wraps",
        "int8",
        lambda x: T.max(-T.int8(-128), x) + T.cast(T.int64(-(2**63)), "int8"),
        lambda x: np.maximum(np.int8(-128), x),
    ),
    ("uint32_sub_wraps", "uint32", lambda x: (x - 5) // 3, lambda x: (x - np.uint32(5)) // np.uint32(3)),
]

BINARY = [
    ("int8_mul_floormod", "int8", lambda x, z: (x * z) % 7, lambda x, z: (x * z) % np.int8(7)),
    ("int16_mul_compare", "int16", lambda x, z: T.if_then_else(x * z > x, x, z),
     lambda x, z: np.where(x * z > x, x, z)),
    ("int32_mul_min", "int32", lambda x, z: T.min(x * z, z), lambda x, z: np.minimum(x * z, z)),
]  # fmt: skip


def _run(backend_ctx, func, arrays, out_index):
    from tests.conformance.test_conformance import compile_or_skip

    kernel = compile_or_skip(func, backend_ctx)
    backend = backend_ctx.execution_backend()
    device = [backend.to_device(a) for a in arrays]
    kernel(*device)
    return backend.to_host(device[out_index])


@pytest.mark.parametrize("name, dtype, body, reference", UNARY, ids=[u[0] for u in UNARY])
def test_unary_data_arithmetic_wraps_like_numpy(backend_ctx, name, dtype, body, reference):
    rng = np.random.default_rng(len(name))
    x = _ints(rng, np.dtype(dtype))
    poison = np.full(N, 99, dtype=dtype)
    out = _run(backend_ctx, _unary_kernel(dtype, body), [x, poison], 1)
    np.testing.assert_array_equal(out, _numpy(reference, x))


@pytest.mark.parametrize("name, dtype, body, reference", BINARY, ids=[b[0] for b in BINARY])
def test_binary_data_arithmetic_wraps_like_numpy(backend_ctx, name, dtype, body, reference):
    rng = np.random.default_rng(len(name))
    x, z = _ints(rng, np.dtype(dtype)), _ints(rng, np.dtype(dtype))
    poison = np.full(N, 99, dtype=dtype)
    out = _run(backend_ctx, _binary_kernel(dtype, body), [x, z, poison], 2)
    np.testing.assert_array_equal(out, _numpy(reference, x, z))


def test_a_name_bound_to_data_wraps_too(backend_ctx):
    """`v = x + 1` names data: `v > x` is false where x + 1 wrapped (the simplifier must not fold it)."""

    @T.prim_func
    def successor_is_greater(X: T.Tensor((N,), "int32"), Y: T.Tensor((N,), "int32")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    v = X[bx * BLOCK + i] + 1
                    Y[bx * BLOCK + i] = T.if_then_else(v > X[bx * BLOCK + i], 1, 0)

    x = _ints(np.random.default_rng(1), np.dtype("int32"))
    out = _run(backend_ctx, successor_is_greater, [x, np.full(N, 99, np.int32)], 1)
    np.testing.assert_array_equal(out, _numpy(lambda x: (x + np.int32(1) > x).astype(np.int32), x))
    assert out[1] == 0  # INT32_MAX + 1 wrapped


def test_math_on_a_python_number_takes_the_dtype_it_meets(backend_ctx):
    """`X[i] * T.exp(1.0)` in a float64 kernel is computed in double precision."""

    @T.prim_func
    def scale_by_e(X: T.Tensor((N,), "float64"), Y: T.Tensor((N,), "float64")):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    Y[bx * BLOCK + i] = X[bx * BLOCK + i] * T.exp(1.0) + T.sqrt(2.0)

    x = np.random.default_rng(2).standard_normal(N)
    out = _run(backend_ctx, scale_by_e, [x, np.full(N, np.nan)], 1)
    np.testing.assert_allclose(out, x * np.exp(1.0) + np.sqrt(2.0), rtol=1e-15, atol=1e-15)


def test_math_on_python_numbers_folds_in_double_precision():
    assert T.exp(1.0) == float(np.exp(np.float64(1.0)))
    assert T.log(-1.0) != T.log(-1.0)  # NaN, as the device function gives it
    assert T.exp(1000.0) == float("inf")
    assert T.pow(2, 0.5) == float(np.sqrt(2.0))
    typed = T.exp(T.float64(1.0))  # a typed constant stays IR, computed on the device in its dtype
    assert isinstance(typed, E.Call) and typed.dtype.name == "float64"
