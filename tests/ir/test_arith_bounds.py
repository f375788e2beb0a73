"""Interval arithmetic and the bound analysis of integer expressions."""

from __future__ import annotations

import itertools
import operator

import pytest

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.arith import Analyzer, Interval, bound, dtype_interval
from tilecraft.ir.arith.interval import decide
from tilecraft.ir.buffer import Buffer, Range

INT32 = Interval(-(2**31), 2**31 - 1)


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _trunc_mod(x: int, y: int) -> int:
    return x - y * _trunc_div(x, y)


SMALL = [Interval(lo, hi) for lo in range(-5, 5, 2) for hi in range(lo, 7, 3)]
OPS = {
    "add": (operator.add, Interval.__add__, True),
    "sub": (operator.sub, Interval.__sub__, True),
    "mul": (operator.mul, Interval.__mul__, True),
    "min": (min, Interval.min, True),
    "max": (max, Interval.max, True),
    "floordiv": (operator.floordiv, Interval.floordiv, True),
    "truncdiv": (_trunc_div, Interval.truncdiv, True),
    "floormod": (operator.mod, Interval.floormod, False),
    "truncmod": (_trunc_mod, Interval.truncmod, False),
}
DIVISIONS = {"floordiv", "truncdiv", "floormod", "truncmod"}


@pytest.mark.parametrize("name", sorted(OPS))
def test_interval_ops_are_sound_and_tight_on_small_intervals(name: str) -> None:
    fn, interval_op, exact = OPS[name]
    for a, b in itertools.product(SMALL, SMALL):
        values = [
            fn(x, y)
            for x in range(a.lo, a.hi + 1)
            for y in range(b.lo, b.hi + 1)
            if not (name in DIVISIONS and y == 0)
        ]
        if not values:
            continue
        result = interval_op(a, b)
        assert all(v in result for v in values), (name, a, b, result)
        if exact:
            assert (result.lo, result.hi) == (min(values), max(values)), (name, a, b, result)


def test_floormod_by_a_constant_is_tight_inside_one_period() -> None:
    assert Interval(17, 20).floormod(Interval.point(8)) == Interval(1, 4)
    assert Interval(-7, -5).floormod(Interval.point(8)) == Interval(1, 3)
    assert Interval(6, 9).floormod(Interval.point(8)) == Interval(0, 7)
    assert Interval(0, 5).floormod(Interval.point(8)) == Interval(0, 5)
    assert Interval(0, 5).floormod(Interval.point(-8)) == Interval(-7, 0)
    assert Interval(-3, 3).truncmod(Interval.point(8)) == Interval(-3, 3)


def test_unbounded_ends() -> None:
    everything = Interval.everything()
    assert Interval(0, None) * Interval(-1, 2) == everything
    assert Interval(0, None) * Interval(2, 3) == Interval(0, None)
    assert Interval(0, 0) * everything == Interval(0, 0)
    assert Interval(3, 10).floordiv(Interval(2, None)) == Interval(0, 5)
    assert Interval(-10, -3).floordiv(Interval(2, None)) == Interval(-5, -1)
    assert Interval(-10, -3).truncdiv(Interval(2, None)) == Interval(-5, 0)
    assert Interval(None, 10).floordiv(Interval.point(4)) == Interval(None, 2)
    assert Interval(5, None).floormod(Interval.point(4)) == Interval(0, 3)
    assert everything.floormod(Interval(1, None)) == Interval(0, None)
    assert everything.truncmod(Interval.point(-4)) == Interval(-3, 3)
    assert Interval(-2, 2).floordiv(Interval.point(0)) == everything


def test_interval_basics() -> None:
    assert Interval.of((0, 7)) == Interval(0, 7)
    assert Interval.of(3) == Interval.point(3)
    assert Interval.of((None, 4)) == Interval(None, 4)
    assert 7 in Interval(0, 7) and 8 not in Interval(0, 7) and -(10**30) in Interval(None, 0)
    assert Interval(0, 3).union(Interval(10, 12)) == Interval(0, 12)
    assert Interval(0, 3).intersect(Interval(5, 9)).is_empty
    assert Interval(0, 3).union(Interval.empty()) == Interval(0, 3)
    assert (Interval.empty() + Interval(0, 1)).is_empty
    assert Interval(2, 3).is_subset(Interval(0, None)) and not Interval(None, 3).is_subset(Interval(0, 9))
    with pytest.raises(TypeError):
        Interval.of("x")


@pytest.mark.parametrize(
    ("op", "diff", "expected"),
    [
        ("LT", Interval(-5, -1), True),
        ("LT", Interval(0, 3), False),
        ("LT", Interval(-1, 0), None),
        ("LE", Interval(-5, 0), True),
        ("GT", Interval(1, None), True),
        ("GE", Interval(None, -1), False),
        ("EQ", Interval.point(0), True),
        ("EQ", Interval(1, 4), False),
        ("NE", Interval(-3, -1), True),
        ("NE", Interval(-3, 1), None),
    ],
)
def test_decide(op: str, diff: Interval, expected) -> None:
    assert decide(op, diff) is expected


i, j, k = (E.Var(dt.int32, name) for name in "ijk")
n = E.Var(dt.int32, "n")
big = E.Var(dt.int64, "big")
RANGES = {i: Interval(0, 31), j: (0, 3), k: Interval(-4, 4), n: Interval(1, None)}


def c(v: int) -> E.IntImm:
    return E.IntImm(dt.int32, v)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (i * 4 + j, Interval(0, 127)),
        (i - j * 2, Interval(-6, 31)),
        (k * k, Interval(-16, 16)),
        ((i * 8 + j) // 8, Interval(0, 31)),
        ((i * 8 + j) % 8, Interval(0, 7)),
        (k // 2, Interval(-2, 2)),
        (k % 3, Interval(0, 2)),
        (E.Div(dt.int32, k, c(3)), Interval(-1, 1)),
        (E.TruncMod(dt.int32, k, c(3)), Interval(-2, 2)),
        (E.min_(i, 16), Interval(0, 16)),
        (E.max_(k, j), Interval(0, 4)),
        (E.select(k < 0, c(-1), i), Interval(-1, 31)),
        (E.select(i < 100, c(-1), i), Interval.point(-1)),
        (n - 1, Interval(0, 2**31 - 2)),
        (n * 2, Interval(2, 2**32 - 2)),  # index arithmetic is exact: widened where it needs it
        (i // n, Interval(0, 31)),
        (j % n, Interval(0, 3)),
    ],
)
def test_expression_bounds(expr: E.Expr, expected: Interval) -> None:
    assert bound(expr, RANGES) == expected


def test_variables_without_range_span_their_dtype() -> None:
    assert bound(i) == INT32
    assert bound(big) == dtype_interval(dt.int64)
    assert bound(i % 16) == Interval(0, 15)
    u = E.Var(dt.uint8, "u")
    assert bound(u) == Interval(0, 255)


def test_index_arithmetic_is_exact_beyond_its_dtype() -> None:
    ranges = {i: (0, 2**20), j: (0, 2**20)}
    assert bound(i * j, ranges) == Interval(0, 2**40)
    assert bound((i * j) % 8, ranges) == Interval(0, 7)
    wide = E.Mul(dt.int64, E.Cast(dt.int64, i), E.Cast(dt.int64, j))
    assert bound(wide, ranges) == Interval(0, 2**40)
    # The guard of issue 10: `bx * 1024 + i < 2**31 + 8` is not provable when bx reaches 2**21.
    guard = E.Cast(dt.int64, i * 1024 + j) < E.const(2**31 + 8, dt.int64)
    assert bound(guard, {i: (0, 2**21), j: (0, 1023)}) == Interval(0, 1)


def test_data_arithmetic_that_may_overflow_wraps_to_the_dtype_range() -> None:
    buf = Buffer("A", (16,), dt.int32)
    x = E.BufferLoad(dt.int32, buf, (c(0),))
    assert bound(x + 1) == INT32
    assert bound(x % 8) == Interval(0, 7)
    assert bound(E.Cast(dt.int8, i), {i: (0, 300)}) == Interval(-128, 127)


def test_casts() -> None:
    ranges = {big: (-5, 2**40)}
    assert bound(E.Cast(dt.int64, i), {i: (0, 9)}) == Interval(0, 9)
    assert bound(E.Cast(dt.int32, big), {big: (-5, 10)}) == Interval(-5, 10)
    assert bound(E.Cast(dt.int32, big), ranges) == INT32
    assert bound(E.Cast(dt.uint8, i), {i: (-1, 3)}) == Interval(0, 255)
    assert bound(E.Cast(dt.bool_, i), {i: (1, 3)}) == Interval.point(1)
    x = E.Var(dt.float32, "x")
    assert bound(E.Cast(dt.int8, x)) == Interval(-128, 127)
    assert bound(x) == Interval.everything()


def test_comparisons_and_logic_are_bool_intervals() -> None:
    ranges = {i: (0, 127)}
    assert bound(i < 128, ranges) == Interval.point(1)
    assert bound(i > 200, ranges) == Interval.point(0)
    assert bound(i < 64, ranges) == Interval(0, 1)
    assert bound(E.logical_and(i < 64, i >= 0), ranges) == Interval(0, 1)
    assert bound(E.And(dt.bool_, i < 64, i > 500), ranges) == Interval.point(0)
    assert bound(E.Or(dt.bool_, i < 64, i < 500), ranges) == Interval.point(1)
    assert bound(E.Not(dt.bool_, i < 500), ranges) == Interval.point(0)


def test_unknown_nodes_are_unbounded_within_dtype() -> None:
    call = E.Call(dt.int32, "popcount", (i,))
    assert bound(call) == INT32


def test_bitwise_index_arithmetic_is_bounded() -> None:
    ranges = {i: (0, 127), j: (0, 7)}
    assert bound(E.Call(dt.int32, "bitwise_and", (i, c(7)))) == Interval(0, 7)
    assert bound(E.int_call("bitwise_xor", i, j), ranges) == Interval(0, 127)
    assert bound(E.int_call("bitwise_or", j, c(8)), ranges) == Interval(0, 15)
    assert bound(E.int_call("shift_left", i, c(3)), ranges) == Interval(0, 1016)
    assert bound(E.int_call("shift_right", i, c(3)), ranges) == Interval(0, 15)


def test_cache_is_used_and_filled() -> None:
    cache: dict = {}
    expr = i * 4 + j
    assert bound(expr, RANGES, cache) == Interval(0, 127)
    assert cache[expr] == Interval(0, 127)


def test_analyzer_bound_is_tighter_than_plain_intervals() -> None:
    an = Analyzer({i: (0, 31), j: (0, 3)})
    expr = (i * 4 + j) - i * 4
    assert bound(expr, an.ranges) == Interval(-124, 127)
    assert an.bound(expr) == Interval(0, 3)


def test_analyzer_binds_ranges_in_several_forms() -> None:
    an = Analyzer()
    an.bind(i, Range(c(0), c(16)))
    assert an.bound(i) == Interval(0, 15)
    an.bind(i, Range(c(2), n))
    assert an.bound(i) == Interval(2, 2**31 - 1)
    an.bind(n, (1, 64))
    an.bind(i, (0, n))
    assert an.bound(i) == Interval(0, 64)
    with an.binding(j, 5):
        assert an.bound(j) == Interval.point(5)
    assert an.bound(j) == INT32
