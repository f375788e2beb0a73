"""Grid expressions compiled to Python agree with the IR interpreter (tilecraft.ir.eval)."""

from __future__ import annotations

import random

import pytest

from tilecraft.errors import TilecraftError
from tilecraft.execution.grid import grid_function, trunc_div, trunc_mod
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.eval import evaluate

M = E.Var(dt.int32, "M")  # a symbolic dim
K = E.Var(dt.int64, "K")  # another, 64-bit
s = E.Var(dt.int32, "s")  # a scalar parameter, matched by name


def _outcome(fn, *args):
    try:
        return fn(*args)
    except ZeroDivisionError:
        return "division by zero"


def _interpret(grid, env):
    return tuple(int(evaluate(e, env)) for e in grid)


def _random_expr(rng: random.Random, depth: int) -> E.Expr:
    """Integer expressions whose values stay far from int32 overflow (products only by small constants)."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([M, K, s, E.const(rng.randint(-9, 300), "int64")])
    a = _random_expr(rng, depth - 1)
    b = _random_expr(rng, depth - 1)
    choice = rng.randrange(10)
    if choice == 0:
        return a + b
    if choice == 1:
        return a - b
    if choice == 2:
        return a * rng.randint(-3, 8)
    if choice == 3:
        return E.floordiv(a, b)
    if choice == 4:
        return E.floormod(a, b)
    if choice == 5:
        return E.truncdiv(a, b)
    if choice == 6:
        return E.truncmod(a, b)
    if choice == 7:
        return rng.choice([E.min_, E.max_])(a, b)
    if choice == 8:
        cmp = rng.choice([E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE])
        return E.select(E.logical_or(E.compare(cmp, a, b), E.compare(E.EQ, b, 7)), a, b)
    return E.cast(a, "int64")


def test_random_expressions_match_the_interpreter():
    rng = random.Random(20240611)
    for _ in range(400):
        grid = tuple(_random_expr(rng, rng.randint(0, 4)) for _ in range(rng.randint(1, 3)))
        fn = grid_function(grid, ["s"], [M, K])
        for _ in range(5):
            m, k, sv = rng.randint(0, 5000), rng.randint(-50, 5000), rng.randint(-100, 100)
            env = {M: m, K: k, s: sv}
            expected = _outcome(_interpret, grid, env)
            assert _outcome(fn, [sv], [m, k]) == expected, fn.__source__


def test_ceil_division_of_an_expression():
    """The usual grid: ceildiv(M * 2 + s, 128) as floordiv(M * 2 + s + 127, 128)."""
    fn = grid_function((E.floordiv(M * 2 + s + 127, 128), E.const(4), 1), ["s"], [M])
    assert fn([3], [1000]) == ((2000 + 3 + 127) // 128, 4, 1)
    assert "//" in fn.__source__ and "_evaluate" not in fn.__source__


def test_truncating_division_follows_c():
    assert [trunc_div(a, b) for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2)]] == [3, -3, -3, 3]
    assert [trunc_mod(a, b) for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2)]] == [1, -1, 1, -1]
    fn = grid_function((E.truncdiv(s, 2), E.truncmod(s, 2), E.floordiv(s, 2)), ["s"], [])
    assert fn([-7], []) == (-3, -1, -4)


def test_dims_match_by_identity_before_name():
    """A grid Var that is the artifact's dim object is found even when a scalar shares its name."""
    other_m = E.Var(dt.int32, "M")
    fn = grid_function((M, other_m), ["M"], [M])
    assert fn([5], [7]) == (7, 5)


def test_float_grids_fall_back_to_the_interpreter():
    grid = (E.cast(E.call("ceil", E.cast(M, "float32") / 128.0), "int32"),)
    fn = grid_function(grid, [], [M])
    assert "_evaluate" in fn.__source__
    assert fn([], [1000]) == (int(evaluate(grid[0], {M: 1000})),) == (8,)


def test_unknown_variables_are_named():
    with pytest.raises(TilecraftError, match=r"uses 'N', which is neither .* \(known: M, s\)"):
        grid_function((E.Var(dt.int32, "N"),), ["s"], [M])
