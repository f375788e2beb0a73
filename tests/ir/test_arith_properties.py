"""Property tests: simplification preserves values and bounds contain every value.

Random int32 expression trees over a few variables with random (often negative) ranges are evaluated
with the reference evaluator before and after simplification, at random points inside the ranges.
"""

from __future__ import annotations

import operator

from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.arith import Analyzer, Interval, bound, simplify
from tilecraft.ir.eval import evaluate
from tilecraft.ir.structural import structural_equal, structural_tokens
from tilecraft.ir.visitor import walk

VARS = tuple(E.Var(dt.int32, name) for name in "abcd")
# A divisor variable that is never zero.
N = E.Var(dt.int32, "n")
LIMIT = 2**30  # intermediate values stay far from int32 overflow

BINARY = {"add": E.Add, "sub": E.Sub, "mul": E.Mul, "min": E.Min, "max": E.Max}
DIVISION = {"floordiv": E.FloorDiv, "floormod": E.FloorMod, "div": E.Div, "truncmod": E.TruncMod}
COMPARE = (E.LT, E.LE, E.GT, E.GE, E.EQ, E.NE)
EXACT = {E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul}


def show(e: E.Expr) -> str:
    try:
        return str(e)
    except Exception:  # the printer is not needed for the properties
        return " ".join(structural_tokens(e, map_names=False))


def const(v: int) -> E.IntImm:
    return E.IntImm(dt.int32, v)


def _leaf(draw, names: tuple[E.Var, ...]) -> E.Expr:
    if draw(st.integers(0, 3)) == 0:
        return const(draw(st.integers(-10, 10)))
    return draw(st.sampled_from(names))


def _divisor(draw) -> E.Expr:
    if draw(st.integers(0, 5)) == 0:
        return N
    return const(draw(st.sampled_from([-9, -8, -4, -3, -2, -1, 1, 2, 3, 4, 5, 7, 8, 16])))


def _condition(draw, names: tuple[E.Var, ...], depth: int) -> E.Expr:
    cls = draw(st.sampled_from(COMPARE))
    cond = cls(dt.bool_, _expr(draw, names, depth), _expr(draw, names, min(depth, 1)))
    joiner = draw(st.sampled_from([None, None, E.And, E.Or, E.Not]))
    if joiner is E.Not:
        return E.Not(dt.bool_, cond)
    if joiner is not None:
        other = draw(st.sampled_from(COMPARE))(dt.bool_, _leaf(draw, names), _leaf(draw, names))
        return joiner(dt.bool_, cond, other)
    return cond


def _expr(draw, names: tuple[E.Var, ...], depth: int) -> E.Expr:
    if depth <= 0 or draw(st.integers(0, 5)) == 0:
        return _leaf(draw, names)
    kind = draw(st.sampled_from([*BINARY, *DIVISION, "add", "sub", "mul", "select", "cast"]))
    if kind in DIVISION:
        return DIVISION[kind](dt.int32, _expr(draw, names, depth - 1), _divisor(draw))
    if kind == "mul":
        # One shallow factor keeps the products far from overflowing.
        return E.Mul(dt.int32, _expr(draw, names, depth - 1), _expr(draw, names, min(depth - 1, 1)))
    if kind == "select":
        cond = _condition(draw, names, depth - 2)
        return E.Select(dt.int32, cond, _expr(draw, names, depth - 1), _expr(draw, names, depth - 1))
    if kind == "cast":
        return E.Cast(dt.int32, E.Cast(dt.int64, _expr(draw, names, depth - 1)))
    return BINARY[kind](dt.int32, _expr(draw, names, depth - 1), _expr(draw, names, depth - 1))


@st.composite
def problems(draw, max_depth: int = 5):
    """(expression, ranges given to the analysis, environment inside those ranges)."""
    names = VARS[: draw(st.integers(2, 4))]
    ranges: dict[E.Var, tuple[int, int]] = {}
    env: dict[E.Var, int] = {}
    for var in names:
        lo = draw(st.integers(-60, 60))
        hi = lo + draw(st.integers(0, 60))
        env[var] = draw(st.integers(lo, hi))
        if draw(st.integers(0, 4)) > 0:  # some variables are left unbounded for the analysis
            ranges[var] = (lo, hi)
    hi = draw(st.integers(1, 20))
    ranges[N] = (1, hi)
    env[N] = draw(st.integers(1, hi))
    expr = _expr(draw, names, draw(st.integers(1, max_depth)))
    return expr, ranges, env


def _no_overflow(expr: E.Expr, env: dict) -> bool:
    """Whether every `+ - *` in `expr` (taken branch or not) computes a value far from int32 limits."""
    for node in walk(expr):
        fn = EXACT.get(type(node))
        if fn is not None and abs(fn(evaluate(node.a, env), evaluate(node.b, env))) >= LIMIT:
            return False
    return True


@settings(max_examples=2000, deadline=None)
@given(problems())
def test_simplify_preserves_values_and_bounds_hold(problem) -> None:
    expr, ranges, env = problem
    assume(_no_overflow(expr, env))
    note(f"expr = {show(expr)}; ranges = { {v.name: r for v, r in ranges.items()} }")
    note(f"env = { {v.name: x for v, x in env.items()} }")
    expected = evaluate(expr, env)

    iv = bound(expr, ranges)
    assert iv.contains(expected), iv

    simplified = simplify(expr, ranges)
    note(f"simplified = {show(simplified)}")
    assert simplified.dtype == expr.dtype
    assert evaluate(simplified, env) == expected

    analyzer = Analyzer(ranges)
    assert analyzer.bound(expr).contains(expected)
    again = analyzer.simplify(expr)
    assert structural_equal(again, simplified, map_names=False)
    assert evaluate(analyzer.simplify(simplified), env) == expected


@settings(max_examples=600, deadline=None)
@given(problems(max_depth=3), st.data())
def test_proofs_and_constraints_are_sound(problem, data) -> None:
    expr, ranges, env = problem
    names = tuple(v for v in VARS if v in env)
    cond = _condition(data.draw, names, 2)
    assume(_no_overflow(expr, env) and _no_overflow(cond, env))
    note(f"expr = {show(expr)}; cond = {show(cond)}; env = { {v.name: x for v, x in env.items()} }")
    analyzer = Analyzer(ranges)
    holds = evaluate(cond, env)
    if analyzer.can_prove(cond):
        assert holds
    if analyzer.can_prove(E.Not(dt.bool_, cond)):
        assert not holds
    if holds:
        with analyzer.constraint(cond):
            assert evaluate(analyzer.simplify(expr), env) == evaluate(expr, env)
            assert analyzer.bound(expr).contains(evaluate(expr, env))
            assert analyzer.can_prove(cond)


_ENDS = st.one_of(st.none(), st.integers(-50, 50))


@st.composite
def intervals(draw) -> Interval:
    lo, hi = draw(_ENDS), draw(_ENDS)
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    return Interval(lo, hi)


def _sample(draw, iv: Interval) -> int:
    lo = iv.lo if iv.lo is not None else (iv.hi if iv.hi is not None else 0) - 1000
    hi = iv.hi if iv.hi is not None else lo + 1000
    return draw(st.integers(lo, hi))


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


INTERVAL_OPS = [
    (operator.add, Interval.__add__),
    (operator.sub, Interval.__sub__),
    (operator.mul, Interval.__mul__),
    (min, Interval.min),
    (max, Interval.max),
    (operator.floordiv, Interval.floordiv),
    (operator.mod, Interval.floormod),
    (_trunc_div, Interval.truncdiv),
    (lambda x, y: x - y * _trunc_div(x, y), Interval.truncmod),
]


@settings(max_examples=800, deadline=None)
@given(intervals(), intervals(), st.sampled_from(range(len(INTERVAL_OPS))), st.data())
def test_interval_ops_contain_every_result(a: Interval, b: Interval, op_index: int, data) -> None:
    fn, interval_op = INTERVAL_OPS[op_index]
    x, y = _sample(data.draw, a), _sample(data.draw, b)
    assume(op_index < 5 or y != 0)
    assert interval_op(a, b).contains(fn(x, y))
