"""Inclusive integer intervals whose ends may be unbounded, with sound interval arithmetic.

Division and remainder by an interval that contains zero ignore the zero divisor: dividing by zero is
undefined behaviour in the generated code, so no result needs to be covered for it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_INF = float("inf")


@dataclass(frozen=True, slots=True)
class Interval:
    """The integers `lo <= x <= hi`; `None` leaves a side unbounded and `lo > hi` is the empty set."""

    lo: int | None = None
    hi: int | None = None

    @staticmethod
    def point(value: int) -> Interval:
        """The single integer `value`."""
        return Interval(value, value)

    @staticmethod
    def everything() -> Interval:
        """All integers."""
        return _EVERYTHING

    @staticmethod
    def empty() -> Interval:
        """No integer at all (what a contradiction leaves)."""
        return _EMPTY

    @staticmethod
    def of(value: Any) -> Interval:
        """An Interval from an Interval, an int (a single point) or an inclusive `(lo, hi)` pair."""
        if isinstance(value, Interval):
            return value
        if isinstance(value, tuple) and len(value) == 2:
            lo, hi = value
            return Interval(
                None if lo is None else operator.index(lo), None if hi is None else operator.index(hi)
            )
        try:
            return Interval.point(operator.index(value))
        except TypeError:
            raise TypeError(f"cannot make an Interval from {type(value).__name__} {value!r}") from None

    # ------------------------------------------------------------ predicates

    @property
    def is_empty(self) -> bool:
        return self.lo is not None and self.hi is not None and self.lo > self.hi

    @property
    def is_point(self) -> bool:
        return self.lo is not None and self.lo == self.hi

    @property
    def is_bounded(self) -> bool:
        return self.lo is not None and self.hi is not None

    def contains(self, value: int) -> bool:
        """Whether the integer `value` lies in the interval."""
        return (self.lo is None or self.lo <= value) and (self.hi is None or value <= self.hi)

    def __contains__(self, value: int) -> bool:
        return self.contains(value)

    def is_subset(self, other: Interval) -> bool:
        """Whether every value of this interval lies in `other`."""
        if self.is_empty:
            return True
        lo_ok = other.lo is None or (self.lo is not None and self.lo >= other.lo)
        hi_ok = other.hi is None or (self.hi is not None and self.hi <= other.hi)
        return lo_ok and hi_ok

    # ------------------------------------------------------------ set operations

    def union(self, other: Interval) -> Interval:
        """The smallest interval holding both."""
        if self.is_empty:
            return other
        if other.is_empty:
            return self
        lo = None if self.lo is None or other.lo is None else min(self.lo, other.lo)
        hi = None if self.hi is None or other.hi is None else max(self.hi, other.hi)
        return Interval(lo, hi)

    def intersect(self, other: Interval) -> Interval:
        """The values in both; may be empty."""
        return Interval(_max_end(self.lo, other.lo), _min_end(self.hi, other.hi))

    # ------------------------------------------------------------ arithmetic

    def __add__(self, other: Interval) -> Interval:
        if self.is_empty or other.is_empty:
            return _EMPTY
        lo = None if self.lo is None or other.lo is None else self.lo + other.lo
        hi = None if self.hi is None or other.hi is None else self.hi + other.hi
        return Interval(lo, hi)

    def __neg__(self) -> Interval:
        if self.is_empty:
            return _EMPTY
        return Interval(None if self.hi is None else -self.hi, None if self.lo is None else -self.lo)

    def __sub__(self, other: Interval) -> Interval:
        return self + (-other)

    def __mul__(self, other: Interval) -> Interval:
        if self.is_empty or other.is_empty:
            return _EMPTY
        corners = [_ext_mul(x, y) for x in _ends(self) for y in _ends(other)]
        return Interval(_from_ext(min(corners)), _from_ext(max(corners)))

    def min(self, other: Interval) -> Interval:
        """The values of `min(x, y)`."""
        if self.is_empty or other.is_empty:
            return _EMPTY
        lo = None if self.lo is None or other.lo is None else min(self.lo, other.lo)
        return Interval(lo, _min_end(self.hi, other.hi))

    def max(self, other: Interval) -> Interval:
        """The values of `max(x, y)`."""
        if self.is_empty or other.is_empty:
            return _EMPTY
        hi = None if self.hi is None or other.hi is None else max(self.hi, other.hi)
        return Interval(_max_end(self.lo, other.lo), hi)

    def floordiv(self, other: Interval) -> Interval:
        """The values of `x // y` (floor division)."""
        return _by_sign(self, other, lambda x, y: _div_positive(x, y, _floor_div_ext))

    def truncdiv(self, other: Interval) -> Interval:
        """The values of C's `x / y` (division truncating toward zero)."""
        return _by_sign(self, other, lambda x, y: _div_positive(x, y, _trunc_div_ext))

    def floormod(self, other: Interval) -> Interval:
        """The values of `x % y` with Python's (floor) semantics: the sign of `y`."""
        return _by_sign(self, other, _floormod_part, pass_sign=True)

    def truncmod(self, other: Interval) -> Interval:
        """The values of C's `x % y`: the sign of `x`, magnitude below `|y|`."""
        if self.is_empty or other.is_empty:
            return _EMPTY
        magnitude = _abs_nonzero(other)
        if magnitude is None:
            return _EVERYTHING
        parts = []
        if self.hi is None or self.hi >= 0:
            parts.append(_mod_positive(self.intersect(Interval(0, None)), magnitude))
        if self.lo is None or self.lo < 0:
            parts.append(-_mod_positive((-self).intersect(Interval(1, None)), magnitude))
        return _union_all(parts)

    def __repr__(self) -> str:
        lo = "-inf" if self.lo is None else self.lo
        hi = "+inf" if self.hi is None else self.hi
        return f"Interval[{lo}, {hi}]"


_EVERYTHING = Interval(None, None)
_EMPTY = Interval(1, 0)


def _min_end(a: int | None, b: int | None) -> int | None:
    """Minimum of two upper ends, None being +inf."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def _max_end(a: int | None, b: int | None) -> int | None:
    """Maximum of two lower ends, None being -inf."""
    if a is None:
        return b
    return a if b is None else max(a, b)


def _ends(iv: Interval) -> tuple[float, float]:
    return (-_INF if iv.lo is None else iv.lo, _INF if iv.hi is None else iv.hi)


def _ext_mul(x: float, y: float) -> float:
    # A zero end times an unbounded end is a product of finite values that tend to 0, not NaN.
    return 0 if x == 0 or y == 0 else x * y


def _from_ext(x: float) -> int | None:
    return None if x in (_INF, -_INF) else int(x)


def _union_all(parts: list[Interval]) -> Interval:
    result = _EMPTY
    for part in parts:
        result = result.union(part)
    return result


def _by_sign(x: Interval, y: Interval, fn: Callable, pass_sign: bool = False) -> Interval:
    """Apply a division-like `fn(x, y)` separately to the positive and the negative divisors.

    `fn` only handles divisors >= 1; negative ones are handled as `fn(-x, -y)` (`x // y == -x // -y`).
    """
    if x.is_empty or y.is_empty:
        return _EMPTY
    parts = []
    positive = y.intersect(Interval(1, None))
    if not positive.is_empty:
        parts.append(fn(x, positive, False) if pass_sign else fn(x, positive))
    negative = (-y).intersect(Interval(1, None))
    if not negative.is_empty:
        parts.append(fn(-x, negative, True) if pass_sign else fn(-x, negative))
    return _union_all(parts) if parts else _EVERYTHING


def _floormod_part(x: Interval, y: Interval, negated: bool) -> Interval:
    # For y < 0, x mod y == -((-x) mod (-y)); _by_sign already negated both operands.
    r = _mod_positive(x, y)
    return -r if negated else r


def _floor_div_ext(x: int, y: int | None) -> int:
    """`x // y`, with `y` None standing for a divisor growing without bound."""
    if y is None:
        return 0 if x >= 0 else -1
    return x // y


def _trunc_div_ext(x: int, y: int | None) -> int:
    if y is None:
        return 0
    q = abs(x) // y
    return q if x >= 0 else -q


def _div_positive(x: Interval, y: Interval, div: Callable[[int, int | None], int]) -> Interval:
    """Values of `div(a, b)` for a in x and b in y, y >= 1; div is monotone in a and in |a / b|."""
    b1, b2 = y.lo, y.hi
    hi = None if x.hi is None else (div(x.hi, b1) if x.hi >= 0 else div(x.hi, b2))
    lo = None if x.lo is None else (div(x.lo, b2) if x.lo >= 0 else div(x.lo, b1))
    return Interval(lo, hi)


def _mod_positive(x: Interval, y: Interval) -> Interval:
    """Values of `a % b` (floor semantics) for a in x and b in y, y >= 1."""
    if x.is_empty:
        return _EMPTY
    if y.is_point and x.is_bounded and x.lo // y.lo == x.hi // y.lo:
        return Interval(x.lo % y.lo, x.hi % y.lo)
    hi = None if y.hi is None else y.hi - 1
    if x.lo is not None and x.lo >= 0:
        hi = _min_end(hi, x.hi)
    return Interval(0, hi)


def _abs_nonzero(y: Interval) -> Interval | None:
    """The values of `|b|` for nonzero b in y; None when y holds only zero."""
    positive = y.intersect(Interval(1, None))
    negative = (-y).intersect(Interval(1, None))
    parts = [p for p in (positive, negative) if not p.is_empty]
    return _union_all(parts) if parts else None


def decide(op: str, diff: Interval) -> bool | None:
    """Decide `a <op> b` from the interval of `a - b`; `op` is a comparison class name (`"LT"`).

    Returns None when the interval does not settle it.
    """
    lo, hi = diff.lo, diff.hi
    if op == "LT":
        return True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
    if op == "LE":
        return True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
    if op == "GT":
        return True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
    if op == "GE":
        return True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
    if op in ("EQ", "NE"):
        if diff.is_point and diff.lo == 0:
            equal: bool | None = True
        elif not diff.contains(0):
            equal = False
        else:
            return None
        return equal if op == "EQ" else not equal
    raise ValueError(f"unknown comparison {op!r}")
