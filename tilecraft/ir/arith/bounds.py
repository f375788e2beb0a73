"""Interval bounds of integer expressions.

Index arithmetic is exact (`tilecraft/ir/arith/exact.py`): its interval is the mathematical one, even
where it does not fit the dtype, because the compiler widens such arithmetic before it prints it. Data
arithmetic wraps around: a result whose interval does not fit its dtype gets the dtype's whole range.
Float expressions are unbounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tilecraft.ir import expr as E
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.arith.interval import Interval, decide
from tilecraft.ir.dtype import DataType

__all__ = ["bound", "dtype_interval"]

_DTYPE_RANGES: dict[str, Interval] = {}


def dtype_interval(dtype: DataType) -> Interval:
    """Every value `dtype` can hold; unbounded for floats."""
    iv = _DTYPE_RANGES.get(dtype.name)
    if iv is None:
        if dtype.kind == "int":
            iv = Interval(-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1)
        elif dtype.kind == "uint":
            iv = Interval(0, (1 << dtype.bits) - 1)
        elif dtype.kind == "bool":
            iv = Interval(0, 1)
        else:
            iv = Interval.everything()
        _DTYPE_RANGES[dtype.name] = iv
    return iv


def bound(
    expr: E.Expr,
    ranges: Mapping[E.Var, Any] | None = None,
    cache: dict[E.Expr, Interval] | None = None,
    exact: ExactTable | None = None,
) -> Interval:
    """An interval holding every value of the integer (or bool) expression `expr`.

    `ranges` gives the known interval of each variable (an Interval or an inclusive `(lo, hi)`);
    other variables range over their whole dtype. `cache`, when given, memoizes intervals by node and
    must be discarded when `ranges` change. `exact` tells index arithmetic from data (and which names
    hold data); it never goes stale.
    """
    ranges = {} if ranges is None else ranges
    exact = ExactTable() if exact is None else exact
    return _Bounder(ranges, {} if cache is None else cache, exact).bound(expr)


class _Bounder:
    def __init__(self, ranges: Mapping[E.Var, Any], cache: dict[E.Expr, Interval], exact: ExactTable) -> None:
        self.ranges = ranges
        self.cache = cache
        self.exact = exact

    def bound(self, e: E.Expr) -> Interval:
        iv = self.cache.get(e)
        if iv is None:
            dtype = e.dtype
            if dtype.kind not in ("int", "uint", "bool"):
                iv = Interval.everything()
            else:
                rule = _RULES.get(type(e))
                iv = rule(self, e) if rule is not None else dtype_interval(dtype)
                if not self.exact.is_index(e):
                    iv = _fit(iv, dtype)
            self.cache[e] = iv
        return iv


def _fit(iv: Interval, dtype: DataType) -> Interval:
    """`iv`, or the whole dtype range when the value may wrap around."""
    full = dtype_interval(dtype.element())
    return iv if iv.is_subset(full) else full


def _var(b: _Bounder, e: E.Var) -> Interval:
    known = b.ranges.get(e)
    full = dtype_interval(e.dtype.element())
    return full if known is None else Interval.of(known).intersect(full)


def _call(b: _Bounder, e: E.Call) -> Interval:
    rule = _CALL_RULES.get(e.op)
    if rule is None or len(e.args) != 2:
        return dtype_interval(e.dtype)
    return rule(b.bound(e.args[0]), b.bound(e.args[1]))


def _low_bits(hi: int) -> Interval:
    """Every value of `hi.bit_length()` bits: what `|` and `^` of values in [0, hi] can give."""
    return Interval(0, (1 << hi.bit_length()) - 1)


def _bitwise_and(x: Interval, y: Interval) -> Interval:
    if _nonneg(x) and _nonneg(y):
        return Interval(0, _min_hi(x, y))
    if _nonneg(x) or _nonneg(y):
        return Interval(0, x.hi if _nonneg(x) else y.hi)
    return Interval.everything()


def _bitwise_or_xor(x: Interval, y: Interval) -> Interval:
    if _nonneg(x) and _nonneg(y) and x.hi is not None and y.hi is not None:
        return _low_bits(max(x.hi, y.hi))
    return Interval.everything()


def _shift_left(x: Interval, y: Interval) -> Interval:
    if y.is_point and 0 <= y.lo < 64:
        return x * Interval.point(1 << y.lo)
    return Interval.everything()


def _shift_right(x: Interval, y: Interval) -> Interval:
    if y.is_point and 0 <= y.lo < 64:
        return x.floordiv(Interval.point(1 << y.lo))
    return Interval.everything()


def _nonneg(iv: Interval) -> bool:
    return iv.lo is not None and iv.lo >= 0 and iv.hi is not None


def _min_hi(x: Interval, y: Interval) -> int:
    return min(x.hi, y.hi)


_CALL_RULES: dict[str, Callable[[Interval, Interval], Interval]] = {
    "bitwise_and": _bitwise_and,
    "bitwise_or": _bitwise_or_xor,
    "bitwise_xor": _bitwise_or_xor,
    "shift_left": _shift_left,
    "shift_right": _shift_right,
}


def _int_imm(b: _Bounder, e: E.IntImm) -> Interval:
    return Interval.point(e.value)


def _binary(op: Callable[[Interval, Interval], Interval]) -> Callable[[_Bounder, E.BinaryOp], Interval]:
    def rule(b: _Bounder, e: E.BinaryOp) -> Interval:
        return op(b.bound(e.a), b.bound(e.b))

    return rule


def _bool_interval(value: bool | None) -> Interval:
    return Interval(0, 1) if value is None else Interval.point(int(value))


def _compare(b: _Bounder, e: E.CmpOp) -> Interval:
    if not (e.a.dtype.is_integer or e.a.dtype.is_bool):
        return Interval(0, 1)
    return _bool_interval(decide(type(e).__name__, b.bound(e.a) - b.bound(e.b)))


def _truth(iv: Interval) -> bool | None:
    if not iv.contains(0):
        return True
    return False if iv.is_point else None


def _and(b: _Bounder, e: E.And) -> Interval:
    x, y = _truth(b.bound(e.a)), _truth(b.bound(e.b))
    if x is False or y is False:
        return _bool_interval(False)
    return _bool_interval(True if x and y else None)


def _or(b: _Bounder, e: E.Or) -> Interval:
    x, y = _truth(b.bound(e.a)), _truth(b.bound(e.b))
    if x or y:
        return _bool_interval(True)
    return _bool_interval(False if x is False and y is False else None)


def _not(b: _Bounder, e: E.Not) -> Interval:
    x = _truth(b.bound(e.a))
    return _bool_interval(None if x is None else not x)


def _select(b: _Bounder, e: E.Select) -> Interval:
    cond = _truth(b.bound(e.condition))
    if cond is True:
        return b.bound(e.true_value)
    if cond is False:
        return b.bound(e.false_value)
    return b.bound(e.true_value).union(b.bound(e.false_value))


def _cast(b: _Bounder, e: E.Cast) -> Interval:
    src = e.value.dtype
    if e.dtype.is_bool:
        return _bool_interval(_truth(b.bound(e.value))) if src.is_integer or src.is_bool else Interval(0, 1)
    if src.is_integer or src.is_bool:
        # A cast that cannot hold the value truncates it, for index arithmetic too.
        return _fit(b.bound(e.value), e.dtype)
    return dtype_interval(e.dtype)


def _ramp(b: _Bounder, e: E.Ramp) -> Interval:
    return b.bound(e.base) + b.bound(e.stride) * Interval(0, e.lanes - 1)


def _broadcast(b: _Bounder, e: E.Broadcast) -> Interval:
    return b.bound(e.value)


_RULES: dict[type, Callable[[_Bounder, Any], Interval]] = {
    E.IntImm: _int_imm,
    E.Var: _var,
    E.Add: _binary(Interval.__add__),
    E.Sub: _binary(Interval.__sub__),
    E.Mul: _binary(Interval.__mul__),
    E.FloorDiv: _binary(Interval.floordiv),
    E.FloorMod: _binary(Interval.floormod),
    E.Div: _binary(Interval.truncdiv),
    E.TruncMod: _binary(Interval.truncmod),
    E.Min: _binary(Interval.min),
    E.Max: _binary(Interval.max),
    E.EQ: _compare,
    E.NE: _compare,
    E.LT: _compare,
    E.LE: _compare,
    E.GT: _compare,
    E.GE: _compare,
    E.And: _and,
    E.Or: _or,
    E.Not: _not,
    E.Select: _select,
    E.Cast: _cast,
    E.Ramp: _ramp,
    E.Broadcast: _broadcast,
    E.Call: _call,
}
