"""Rounding to the narrow float types once, whatever ml_dtypes is installed: float32 rounded to odd
first (tilecraft.ir.narrowing), in constant folding, the IR evaluator and the printers' constants."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conformance.exact_rounding import nearest
from tilecraft.codegen.c_family import narrow_constant
from tilecraft.ir import expr as E
from tilecraft.ir.dtype import as_dtype
from tilecraft.ir.eval import evaluate
from tilecraft.ir.narrowing import float32_odd, round_once

NARROW = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float4_e2m1fn")


def _hair_off_midpoints(name: str, count: int = 400) -> np.ndarray:
    """float64 values 2**-35 off midpoints of `name`, which float32 rounds onto the midpoint."""
    table = nearest(np.array([0.0]), name)  # the storage dtype
    width = np.uint16 if table.itemsize == 2 else np.uint8
    codes = np.arange(2 ** (8 * table.itemsize) // 2, dtype=np.uint32).astype(width)
    with np.errstate(invalid="ignore"):
        values = np.unique(codes.view(table.dtype).astype(np.float64))
    values = values[np.isfinite(values) & (values >= 0)]
    mid = (values[:-1] + values[1:]) / 2
    rng = np.random.default_rng(len(name))
    mid = rng.choice(mid, count)
    hair = np.where(rng.random(count) < 0.5, 1 + 2.0**-35, 1 - 2.0**-35)
    return np.concatenate([mid * hair, -mid * hair])


@pytest.mark.parametrize("name", NARROW)
def test_round_once_is_the_nearest_value(name):
    x = _hair_off_midpoints(name)
    got = round_once(x, as_dtype(name))
    assert np.array_equal(
        got.view(np.uint8 if got.itemsize == 1 else np.uint16),
        nearest(x, name).view(got.view(np.uint8 if got.itemsize == 1 else np.uint16).dtype),
    )


def test_float32_odd_sets_the_sticky_bit_and_keeps_exact_values():
    x = np.array([1.0, 1 + 2.0**-40, -(1 + 2.0**-40), 1 - 2.0**-40, 3.5, np.inf, -np.inf, 1e300, 0.0])
    bits = float32_odd(x).view(np.uint32)
    assert bits[0] == np.float32(1.0).view(np.uint32)
    assert bits[1] == np.float32(1.0).view(np.uint32) | 1  # truncated to 1.0, sticky
    assert bits[2] == np.float32(-1.0).view(np.uint32) | 1
    assert bits[3] == np.float32(1 - 2.0**-24).view(np.uint32)  # 0x3f7fffff is odd already
    assert float32_odd(x)[4] == 3.5 and np.isinf(float32_odd(x)[5:7]).all()
    assert bits[7] == 0x7F7FFFFF and bits[8] == 0


@pytest.mark.parametrize("value", [2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), 16973823, 2**64 - 1])
def test_integers_round_once_to_bfloat16(value):
    array = np.array([value], np.uint64 if value >= 2**63 else np.int64)
    assert (
        round_once(array, as_dtype("bfloat16")).view(np.uint16)[0]
        == nearest([value], "bfloat16").view(np.uint16)[0]
    )


@pytest.mark.parametrize("name", ("bfloat16", "float8_e4m3fn", "float8_e5m2"))
def test_constant_folding_and_printed_constants_round_once(name):
    dtype = as_dtype(name)
    for v in _hair_off_midpoints(name, 50):
        want = float(nearest([float(v)], name).astype(np.float64)[0])
        assert evaluate(E.cast(E.const(float(v), "float64"), dtype)) == want, v
        assert narrow_constant(float(v), dtype) == want, v
