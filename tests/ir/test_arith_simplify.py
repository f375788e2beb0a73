"""Concrete rewrites of the arithmetic simplifier, each compared structurally with the expected tree."""

from __future__ import annotations

import pytest

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.arith import Analyzer, can_prove, simplify
from tilecraft.ir.structural import structural_equal, structural_hash, structural_tokens

i, j, k, x, y = (E.Var(dt.int32, name) for name in "ijkxy")
n, m = E.Var(dt.int32, "n"), E.Var(dt.int32, "m")
a64 = E.Var(dt.int64, "a64")
fx, fy = E.Var(dt.float32, "fx"), E.Var(dt.float32, "fy")
u = E.Var(dt.uint32, "u")
TRUE, FALSE = E.const(True), E.const(False)


def c(v: int, dtype=dt.int32) -> E.IntImm:
    return E.IntImm(dtype, v)


def show(e: E.Expr) -> str:
    try:
        return str(e)
    except Exception:  # the printer is optional for these tests
        return " ".join(structural_tokens(e, map_names=False))


def check(expr: E.Expr, expected: E.Expr, ranges=None) -> None:
    result = simplify(expr, ranges)
    assert structural_equal(result, expected, map_names=False), f"{show(result)} != {show(expected)}"
    assert result.dtype == expr.dtype


# ---------------------------------------------------------------- canonical sums


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ((i * 4 + j) - j, i * 4),
        (i * 32 + j * 8 - (i * 32), j * 8),
        ((x + 1) * 2 - 2, x * 2),
        (x + x + x, x * 3),
        (x - x, c(0)),
        ((j + i) + (i - j), i * 2),
        (E.Add(dt.int32, c(3), c(4)), c(7)),
        (E.Mul(dt.int32, c(3), E.Add(dt.int32, x, c(0))), x * 3),
        (E.Sub(dt.int32, c(0), x), x * -1),
        (E.Sub(dt.int32, c(5), x * 2), c(5) - x * 2),
        (j - i, j - i),
        ((x + 1) * (y + 1), x + x * y + y + 1),
        ((x + y) * (x - y), x * x - y * y),
    ],
)
def test_canonical_sums(expr: E.Expr, expected: E.Expr) -> None:
    check(expr, expected)


def test_term_order_is_deterministic() -> None:
    first = simplify(j + i * 4 + k)
    second = simplify(k + (j + i * 4))
    check(first, i * 4 + j + k)
    assert structural_hash(first, map_names=False) == structural_hash(second, map_names=False)


def test_constants_wrap_to_the_dtype() -> None:
    check(E.Add(dt.int32, c(2**31 - 1), c(1)), c(-(2**31)))
    check((x + 2**30) * 4 - x * 4, c(0))


def test_int64_stays_int64_and_casts_are_atoms() -> None:
    expr = E.Sub(dt.int64, E.Add(dt.int64, a64 * 4, E.Cast(dt.int64, i)), a64 * 4)
    check(expr, E.Cast(dt.int64, i))
    mixed = E.Add(dt.int64, E.Cast(dt.int64, i + j - j), a64)
    check(mixed, a64 + E.Cast(dt.int64, i))


# ---------------------------------------------------------------- floor division and modulo


@pytest.mark.parametrize(
    ("expr", "expected", "ranges"),
    [
        ((i * 8 + j) // 8, i + j // 8, None),
        ((i * 8 + j) // 8, i, {j: (0, 7)}),
        ((i * 8 + j) % 8, j % 8, None),
        ((i * 8 + j) % 8, j, {j: (0, 7)}),
        (x // 1, x, None),
        (x % 1, c(0), None),
        ((x * 8) % 8, c(0), None),
        ((x * 16) % 8, c(0), None),
        ((x * 16) // 8, x * 2, None),
        ((x // 4) // 8, x // 32, None),
        (x // 16, c(0), {x: (0, 15)}),
        (x % 16, x, {x: (0, 15)}),
        (x // 16, c(-1), {x: (-16, -1)}),
        (x % 16, x + 16, {x: (-16, -1)}),
        ((x * 8 - 1) // 8, x - 1, None),
        ((x * 8 - 1) % 8, c(7), None),
        ((x + 9) // 8, (x + 1) // 8 + 1, None),
        (x // -1, x * -1, None),
        ((x * -8 + 3) // -8, x - 1, None),
        ((x * -8 + 3) % -8, c(-5), None),
        ((i * 4 + j * 8 + 3) // 16, (i + j * 2) // 4, None),
        ((i * 4 + 2) % 8, (i % 2) * 4 + 2, None),
        ((x % 16) % 4, x % 4, None),
        ((x % 16) % 32, x % 16, None),
        ((i * n + j) // n, i, {j: (0, 7), n: (8, 64)}),
        ((i * n + j) % n, j, {j: (0, 7), n: (8, 64)}),
        ((i * n * 2 + j) // n, i * 2 + j // n, None),
        (E.FloorDiv(dt.int32, c(-7), c(2)), c(-4), None),
        (E.FloorMod(dt.int32, c(-7), c(2)), c(1), None),
    ],
)
def test_floor_division(expr: E.Expr, expected: E.Expr, ranges) -> None:
    check(expr, expected, ranges)


def test_floor_division_rules_need_their_preconditions() -> None:
    # j may be negative or too large: nothing can be dropped.
    check((i * 8 + j) // 8, i + j // 8, {j: (-1, 7)})
    check((i * 8 + j) % 8, j % 8, {j: (0, 8)})
    # A negative outer divisor does not combine with an inner one.
    check((x // 4) // -2, (x // 4) // -2)
    # Division by a constant zero is left for the program to fail on.
    check(E.FloorDiv(dt.int32, x, c(0)), E.FloorDiv(dt.int32, x, c(0)))
    check(E.FloorMod(dt.int32, x + 0, c(0)), E.FloorMod(dt.int32, x, c(0)))
    # The nested product would not fit in int32.
    check((x // 65536) // 65536, (x // 65536) // 65536)


def test_div_and_mod_recombine() -> None:
    check((x // 8) * 8 + x % 8, x)
    check(((x // 8) * 8 + x % 8) * 3 - x, x * 2)
    check(E.Add(dt.int32, E.Div(dt.int32, x, c(4)) * 4, E.TruncMod(dt.int32, x, c(4))), x)
    check((x // 8) * 4 + x % 8, (x // 8) * 4 + x % 8)


def test_truncating_division_only_for_nonnegative_operands() -> None:
    div = E.Div(dt.int32, i * 8 + j, c(8))
    mod = E.TruncMod(dt.int32, i * 8 + j, c(8))
    ranges = {i: (0, 10), j: (0, 7)}
    check(div, i, ranges)
    check(mod, j, ranges)
    check(E.Div(dt.int32, i * 8 + j, c(8)), i + E.Div(dt.int32, j, c(8)), {i: (0, 10), j: (0, 100)})
    # A dividend that may be negative keeps the C semantics untouched.
    check(div, div, {i: (-1, 10), j: (0, 7)})
    check(mod, mod, {i: (-1, 10), j: (0, 7)})
    check(E.Div(dt.int32, x, c(1)), x)
    check(E.Div(dt.int32, x, c(-1)), x * -1)
    check(E.TruncMod(dt.int32, x, c(-1)), c(0))
    check(E.Div(dt.int32, c(-7), c(2)), c(-3))
    check(E.TruncMod(dt.int32, c(-7), c(2)), c(-1))


# ---------------------------------------------------------------- min, max, select, compare, logic


@pytest.mark.parametrize(
    ("expr", "expected", "ranges"),
    [
        (E.min_(x, x), x, None),
        (E.Min(dt.int32, c(3), c(5)), c(3), None),
        (E.Max(dt.int32, c(3), c(5)), c(5), None),
        (E.min_(i, 128), i, {i: (0, 128)}),
        (E.min_(i, 128), c(128), {i: (128, 300)}),
        (E.min_(i, 128), E.min_(i, 128), {i: (0, 129)}),
        (E.max_(x + 1, x), x + 1, None),
        (E.min_(x * 2 - x, x), x, None),
        (E.Min(dt.int32, c(3), x), E.min_(x, 3), None),
        (E.min_(E.min_(x, 5), 3), E.min_(x, 3), None),
        (E.max_(E.max_(x, 5), 3), E.max_(x, 5), None),
        (E.max_(E.max_(x, 3), 5), E.max_(x, 5), None),
        (E.select(i < 128, x, y), x, {i: (0, 127)}),
        (E.select(i < 128, x, y), y, {i: (128, 130)}),
        (E.select(i < 64, x + 1 - 1, x), x, None),
        (E.select(i < 64, x, y), E.select(i < 64, x, y), {i: (0, 127)}),
    ],
)
def test_min_max_select(expr: E.Expr, expected: E.Expr, ranges) -> None:
    check(expr, expected, ranges)


@pytest.mark.parametrize(
    ("expr", "expected", "ranges"),
    [
        (i < 128, TRUE, {i: (0, 127)}),
        (i < 127, i < 127, {i: (0, 127)}),
        (i >= 0, TRUE, {i: (0, 127)}),
        (i > 127, FALSE, {i: (0, 127)}),
        (x + 1 > x, TRUE, None),
        (x * 2 == x + x, TRUE, None),
        (x * 2 != x * 2 + 1, TRUE, None),
        (i * 4 + j < 128, TRUE, {i: (0, 31), j: (0, 3)}),
        (i * 4 + j <= 126, i * 4 + j <= 126, {i: (0, 31), j: (0, 3)}),
        (E.compare(E.LT, x, y), x < y, None),
    ],
)
def test_comparisons(expr: E.Expr, expected: E.Expr, ranges) -> None:
    check(expr, expected, ranges)


def test_logic() -> None:
    check(E.And(dt.bool_, TRUE, x < y), x < y)
    check(E.And(dt.bool_, x < y, FALSE), FALSE)
    check(E.Or(dt.bool_, x < y, TRUE), TRUE)
    check(E.Or(dt.bool_, FALSE, x < y), x < y)
    check(E.And(dt.bool_, x < y, x < y), x < y)
    check(E.Not(dt.bool_, E.Not(dt.bool_, x < y)), x < y)
    check(E.Not(dt.bool_, x < y), x >= y)
    check(E.And(dt.bool_, i < 200, x < y), x < y, {i: (0, 127)})
    # `not (a < b)` is not `a >= b` when a is NaN.
    check(E.Not(dt.bool_, fx < fy), E.Not(dt.bool_, fx < fy))


# ---------------------------------------------------------------- floats, casts, unsigned


def test_floats_are_only_folded() -> None:
    check(E.Sub(dt.float32, E.Add(dt.float32, fx, fy), fy), E.Sub(dt.float32, E.Add(dt.float32, fx, fy), fy))
    check(
        E.Mul(dt.float32, fx, E.FloatImm(dt.float32, 1.0)), E.Mul(dt.float32, fx, E.FloatImm(dt.float32, 1.0))
    )
    folded = simplify(E.Add(dt.float32, E.FloatImm(dt.float32, 0.1), E.FloatImm(dt.float32, 0.2)))
    import numpy as np

    assert isinstance(folded, E.FloatImm) and folded.value == float(np.float32(0.1) + np.float32(0.2))
    check(E.Call(dt.float32, "sqrt", (E.FloatImm(dt.float32, 4.0),)), E.FloatImm(dt.float32, 2.0))
    check(
        E.Call(dt.float32, "my_op", (E.FloatImm(dt.float32, 4.0),)),
        E.Call(dt.float32, "my_op", (E.FloatImm(dt.float32, 4.0),)),
    )


def test_integer_parts_of_float_expressions_are_simplified() -> None:
    cast = E.Cast(dt.float32, (i * 4 + j) - j)
    check(E.Mul(dt.float32, fx, cast), E.Mul(dt.float32, fx, E.Cast(dt.float32, i * 4)))
    check(E.Cast(dt.int32, E.IntImm(dt.int64, 5)), c(5))
    check(E.Cast(dt.int32, E.FloatImm(dt.float32, -2.5)), c(-2))
    check(E.Cast(dt.int32, i), i)
    check(E.Cast(dt.int64, i + 0), E.Cast(dt.int64, i))


def test_unsigned_arithmetic_keeps_wraparound() -> None:
    one, four = c(1, dt.uint32), c(4, dt.uint32)
    expr = E.FloorDiv(dt.uint32, E.Add(dt.uint32, u, four), four)
    check(expr, expr)
    check(E.Sub(dt.uint32, c(1, dt.uint32), c(2, dt.uint32)), c(2**32 - 1, dt.uint32))
    check(E.LT(dt.bool_, u, E.IntImm(dt.uint32, 0)), FALSE)
    check(E.Add(dt.uint32, u, one), E.Add(dt.uint32, u, one))


def test_loads_have_their_indices_simplified() -> None:
    from tilecraft.ir.buffer import Buffer

    A = Buffer("A", (c(16), c(16)), dt.float32)
    load = E.BufferLoad(dt.float32, A, ((i * 4 + j) - j, (i * 8 + j) % 8))
    check(load, E.BufferLoad(dt.float32, A, (i * 4, j)), {j: (0, 7)})


# ---------------------------------------------------------------- the Analyzer


def test_analyzer_bindings_and_constraints() -> None:
    an = Analyzer({i: (0, 15)})
    assert an.can_prove(i < 16)
    assert not an.can_prove(i < 15)
    with an.binding(j, (0, 7)):
        assert structural_equal(an.simplify((i * 8 + j) // 8), i, map_names=False)
    assert structural_equal(an.simplify((i * 8 + j) // 8), i + j // 8, map_names=False)
    with an.constraint(E.logical_and(k >= 0, k < n)):
        assert an.can_prove(k < n)
        assert an.can_prove(k <= n - 1)
        assert an.can_prove(k + 1 <= n)
        assert not an.can_prove(k < n - 1)
        assert an.can_prove(k >= 0)
    assert not an.can_prove(k < n)
    assert not an.can_prove(k >= 0)
    with an.constraint(j < 8), an.constraint(j >= 0):
        assert structural_equal(an.simplify((i * 8 + j) % 8), j, map_names=False)
    with an.constraint(E.Not(dt.bool_, x >= 4)):
        assert an.can_prove(x <= 3)


def test_analyzer_can_prove_equal() -> None:
    an = Analyzer({j: (0, 7)})
    assert an.can_prove_equal((i * 8 + j) // 8, i)
    assert an.can_prove_equal((x + 1) * 2, x * 2 + 2)
    assert not an.can_prove_equal(x, y)
    assert an.can_prove_equal(E.Add(dt.float32, fx, fy), E.Add(dt.float32, fx, fy))
    assert not an.can_prove_equal(E.Add(dt.float32, fx, fy), E.Add(dt.float32, fy, fx))


def test_module_level_can_prove() -> None:
    assert can_prove(i * 4 + j < 128, {i: (0, 31), j: (0, 3)})
    assert not can_prove(i * 4 + j < 127, {i: (0, 31), j: (0, 3)})
    assert can_prove(True)
    assert can_prove(E.logical_or(x < y, i >= 0), {i: (0, 1)})


def test_point_ranges_become_constants() -> None:
    check(x * 4 + y, y + 12, {x: 3})
    check(n // m, c(2), {n: (16, 17), m: (8, 8)})


def test_casts_that_round_trip_are_removed() -> None:
    check(E.Cast(dt.int32, E.Cast(dt.int64, x + 1 - 1)), x)
    u8 = E.Var(dt.uint8, "u8")
    check(E.Cast(dt.uint8, E.Cast(dt.int8, u8)), u8)
    # Narrowing first loses bits: not a round trip.
    narrowed = E.Cast(dt.int64, E.Cast(dt.int32, a64))
    check(narrowed, narrowed)
    through_float = E.Cast(dt.int32, E.Cast(dt.float32, x))
    check(through_float, through_float)


def test_contradictory_constraints_do_not_crash() -> None:
    an = Analyzer({i: (0, 10), j: (0, 7)})
    with an.constraint(i < 0):
        for expr in ((i * 8 + j) // 8, (i * 8 + j) % 8, E.min_(i, j), E.Div(dt.int32, i, c(3)), i < 5):
            assert an.simplify(expr).dtype == expr.dtype
            an.bound(expr)
    assert structural_equal(an.simplify((i * 8 + j) // 8), i, map_names=False)


def test_assumed_divisible_dims_prove_alignment_and_nothing_else() -> None:
    """While a kernel specialized on `k % 16 == 0` is lowered, proofs may use it (a float16 row of k
    elements is a 16-byte multiple); simplification never rewrites with it, and it ends with the block."""
    from tilecraft.ir.arith import assumed_divisible

    row_bytes_aligned = E.compare(E.EQ, E.floormod(k * 2, 16), 0)
    assert not can_prove(row_bytes_aligned)
    with assumed_divisible([(k, 16)]):
        assert can_prove(row_bytes_aligned)
        assert can_prove(E.compare(E.EQ, E.floormod(k * 3 + n * 32, 16), 0))
        assert not can_prove(E.compare(E.EQ, E.floormod(k, 32), 0))  # 16, not 32
        assert not can_prove(E.compare(E.EQ, E.floormod(n * 2, 16), 0))  # n is not assumed
        assert structural_equal(simplify(E.floormod(k, 16)), E.floormod(k, 16))
    assert not can_prove(row_bytes_aligned)
