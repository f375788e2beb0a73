"""Conversions to float16, bfloat16 and float8 round once, as NumPy and ml_dtypes convert, on every
backend: float64 values (and, for bfloat16, integers of 32 bits or more) that sit just off a midpoint of
the narrow type, where rounding to float32 first lands on the midpoint and the second rounding goes the
wrong way; and constants, which the generated code writes as float32 literals."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft.language as T
from tests.conformance.exact_rounding import nearest, storage

N, BLOCK = 600, 256  # ragged: the last block is partial
NARROW = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def _np(name: str) -> np.dtype:
    return storage(name)


def _cast_kernel(src: str, dst: str):
    @T.prim_func
    def cast(X: T.Tensor((N,), src), Y: T.Tensor((N,), dst)):
        with T.Kernel(T.ceildiv(N, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < N:
                    Y[bx * BLOCK + i] = T.cast(X[bx * BLOCK + i], dst)

    return cast


def _midpoints(dst: str, rng) -> np.ndarray:
    """Midpoints between neighbouring finite values of `dst` (exact in float64), positive and negative."""
    narrow = _np(dst)
    width = np.uint16 if narrow.itemsize == 2 else np.uint8
    bits = np.arange(0, 2 ** (8 * narrow.itemsize) // 2 - 1).astype(width)  # positive, and the next one
    with np.errstate(invalid="ignore"):
        low, high = (b.view(narrow).astype(np.float64) for b in (bits, bits + width(1)))
    finite = np.isfinite(low) & np.isfinite(high)
    pick = rng.choice(np.flatnonzero(finite), N // 2)
    mid = (low[pick] + high[pick]) / 2
    return np.concatenate([mid, -mid])


def _double_rounding_inputs(dst: str, rng) -> np.ndarray:
    """float64 values a hair off a midpoint of `dst`: float32 rounds each onto the midpoint."""
    mid = _midpoints(dst, rng)
    hair = np.where(rng.random(mid.size) < 0.5, 1 + 2.0**-35, 1 - 2.0**-35)
    x = mid * hair
    assert np.all(x.astype(np.float32).astype(np.float64) == mid)  # the trap: float32 lands on the midpoint
    return x


def _run(backend_ctx, func, x, dst):
    from tests.conformance.test_conformance import compile_or_skip

    kernel = compile_or_skip(func, backend_ctx)
    backend = backend_ctx.execution_backend()
    y = backend.to_device(np.full(N, np.nan, _np(dst)))
    kernel(backend.to_device(x), y)
    return backend.to_host(y)


def _assert_same_bits(out: np.ndarray, expected: np.ndarray, x: np.ndarray) -> None:
    width = np.uint16 if expected.itemsize == 2 else np.uint8
    wrong = np.flatnonzero(out.view(width) != expected.view(width))
    assert wrong.size == 0, (
        f"{wrong.size} of {x.size} wrong, first: {x[wrong[0]]!r} -> {out[wrong[0]]} (expected {expected[wrong[0]]})"
    )


@pytest.mark.parametrize("dst", NARROW)
def test_float64_converts_to_a_narrow_float_in_one_rounding(backend_ctx, dst):
    rng = np.random.default_rng(len(dst))
    x = _double_rounding_inputs(dst, rng)[:N]
    x[: N // 10] = rng.standard_normal(N // 10)  # and ordinary values
    out = _run(backend_ctx, _cast_kernel("float64", dst), x, dst)
    _assert_same_bits(out, nearest(x, dst), x)


@pytest.mark.parametrize("src", ["int32", "uint32", "int64", "uint64"])
def test_wide_integers_convert_to_bfloat16_in_one_rounding(backend_ctx, src):
    rng = np.random.default_rng(7)
    info = np.iinfo(src)
    # A bfloat16 midpoint m = (2k + 1) * 2**(e - 8) for a large power e, and m - 1, m + 1 around it.
    exponent = rng.integers(24, min(info.bits - 1, 62), N)
    mid = (2 * rng.integers(128, 256, N) + 1).astype(object) * (2 ** (exponent - 8)).astype(object)
    x = np.array([int(m) + int(d) for m, d in zip(mid, rng.choice([-1, 1], N))], dtype=object)
    if info.min < 0:
        x = x * rng.choice([-1, 1], N)
    x = np.clip(x, int(info.min), int(info.max)).astype(src)
    out = _run(backend_ctx, _cast_kernel(src, "bfloat16"), x, "bfloat16")
    _assert_same_bits(out, nearest(x, "bfloat16"), x)


@pytest.mark.parametrize("dst", NARROW)
def test_constants_of_a_narrow_float_are_rounded_once(backend_ctx, dst):
    above, below = (float(v) for v in _double_rounding_inputs(dst, np.random.default_rng(3))[:2])
    above, below = abs(above), -abs(below)

    @T.prim_func
    def constants(Y: T.Tensor((N,), dst)):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(2):
                Y[i] = T.if_then_else(i == 0, T.cast(above, dst), T.cast(below, dst))

    from tests.conformance.test_conformance import compile_or_skip

    kernel = compile_or_skip(constants, backend_ctx)
    backend = backend_ctx.execution_backend()
    y = backend.to_device(np.full(N, np.nan, _np(dst)))
    kernel(y)
    x = np.array([above, below])
    _assert_same_bits(backend.to_host(y)[:2], nearest(x, dst), x)
