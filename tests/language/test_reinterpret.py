"""`T.reinterpret(value, dtype)`: the same bits read as another type of the same width.

The conformance case `power_of_two_scale_through_bits` runs TileLang's act_quant idiom (float exponent
bits both ways) on every backend; these tests cover the rest: 16-bit floats through their stored bits,
the argument order TileLang still accepts, constant folding, the printed form and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir.expr import IRError

# WGSL's bitcast takes 32-bit scalars (test below); every other runnable backend reads the stored bits
SIXTEEN_BIT = [c for c in declared_cases() if c.kind != "webgpu"]


def half_bits(n: int):
    @T.prim_func
    def half_bits(
        h: T.Tensor((n,), "float16"), bits: T.Tensor((n,), "uint16"), neg: T.Tensor((n,), "float16")
    ):
        with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < n:
                    bits[bx * 64 + i] = T.reinterpret(h[bx * 64 + i], "uint16")
                    neg[bx * 64 + i] = T.reinterpret(
                        T.reinterpret(h[bx * 64 + i], "uint16") ^ T.uint16(0x8000), "float16"
                    )

    return half_bits


@pytest.mark.parametrize("case", SIXTEEN_BIT, ids=[c.id for c in SIXTEEN_BIT])
def test_float16_bits_both_ways(case):
    ctx = resolve(case)
    n = 300
    h = np.random.default_rng(0).standard_normal(n).astype(np.float16)
    bits, neg = np.full(n, 7, np.uint16), np.full(n, np.nan, np.float16)
    tilecraft.compile(half_bits(n), ctx=ctx)(h, bits, neg)
    np.testing.assert_array_equal(bits, h.view(np.uint16))
    np.testing.assert_array_equal(neg, -h)


def test_webgpu_refuses_16_bit_reinterpret_at_lowering():
    with pytest.raises(LoweringError, match="T.reinterpret of float16 as uint16 is not supported"):
        tilecraft.lower(half_bits(64), target="webgpu")


def test_constants_fold_and_the_old_argument_order_is_accepted():
    assert E.const_value(T.reinterpret(T.float32(1.0), "uint32")) == 0x3F800000
    assert E.const_value(T.reinterpret("float32", T.int32(0x40000000))) == 2.0
    x = E.Var(T.float32, "x")
    assert T.reinterpret(x, "float32") is x


def test_widths_must_match():
    with pytest.raises(IRError, match="same width"):
        T.reinterpret(E.Var(T.float32, "x"), "uint16")


def test_reinterpret_prints_and_parses_back():
    assert "T.reinterpret(" in assert_roundtrip(half_bits(64))
