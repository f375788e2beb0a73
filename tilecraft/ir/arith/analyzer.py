"""The public arithmetic analyzer: variable ranges, scoped constraints, simplification and proofs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from tilecraft.ir import expr as E
from tilecraft.ir.arith.bounds import dtype_interval
from tilecraft.ir.arith.canonical import Poly
from tilecraft.ir.arith.interval import Interval
from tilecraft.ir.arith.rewrite import is_signed_int
from tilecraft.ir.arith.simplifier import Simplifier
from tilecraft.ir.buffer import Range

__all__ = ["Analyzer", "assumed_divisible", "can_prove", "simplify"]

_MISSING = object()

# Dims a kernel was specialized on being multiples of a number (`tilecraft.divisible_dims`), true while
# that kernel is lowered: proofs may use them, simplification never does (its results stay exact).
_DIVISIBLE: ContextVar[tuple[tuple[E.Var, int], ...]] = ContextVar("tilecraft_divisible", default=())


@contextmanager
def assumed_divisible(facts: Iterable[tuple[E.Var, int]] | None) -> Iterator[None]:
    """Within the block, every Analyzer may prove what follows from each `var` being a multiple of its
    int (the JIT specializes a kernel on its dynamic dims' divisibility and checks it at each call)."""
    token = _DIVISIBLE.set(tuple(facts or ()))
    try:
        yield
    finally:
        _DIVISIBLE.reset(token)


class Analyzer:
    """Simplifies and reasons about integer index expressions under known variable ranges.

    Ranges are inclusive intervals (`Interval`, `(lo, hi)` with None for an unbounded side, a single
    int, or an IR `Range` for the half-open `[min, min + extent)`). Like C compilers, the integer
    rewrites assume that index arithmetic does not overflow.

        an = Analyzer({i: (0, 127)})
        with an.binding(j, (0, 7)):
            an.simplify((i * 8 + j) // 8)   # -> i
        with an.constraint(k < n):
            an.can_prove(k < n)             # -> True
    """

    def __init__(self, ranges: Mapping[E.Var, Any] | None = None) -> None:
        self._ranges: dict[E.Var, Interval] = {}
        self._facts: list[Poly] = []
        self._known: dict[tuple, bool] = {}
        self._engine = Simplifier(self._ranges, self._facts, self._known)
        for var, value in (ranges or {}).items():
            self._ranges[var] = self._interval(value)

    @property
    def ranges(self) -> Mapping[E.Var, Interval]:
        """The currently known variable ranges (read-only)."""
        return MappingProxyType(self._ranges)

    def bind(self, var: E.Var, value: Any) -> None:
        """Set the range of `var` (replacing a previous one)."""
        interval = self._interval(value)
        self._ranges[var] = interval
        self._engine.invalidate()

    @contextmanager
    def binding(self, var: E.Var, value: Any) -> Iterator[None]:
        """Bind `var` for the duration of a `with` block, e.g. a loop body."""
        old = self._ranges.get(var, _MISSING)
        self.bind(var, value)
        try:
            yield
        finally:
            if old is _MISSING:
                self._ranges.pop(var, None)
            else:
                self._ranges[var] = old
            self._engine.invalidate()

    @contextmanager
    def constraint(self, condition: E.ExprLike) -> Iterator[None]:
        """Assume `condition` holds inside a `with` block (an `if` body, a guarded region).

        The condition and each part of a conjunction become known to be true (their negations false);
        comparisons of signed integers also become facts for proofs about other expressions, and
        comparisons that bound a single variable narrow that variable's range.
        """
        saved_ranges = dict(self._ranges)
        saved_known = dict(self._known)
        saved_facts = len(self._facts)
        condition = E.convert(condition)
        self._assume(self.simplify(condition))
        # Narrowed ranges may simplify the condition further; remember that form as true too.
        self._remember(self.simplify(condition))
        try:
            yield
        finally:
            self._ranges.clear()
            self._ranges.update(saved_ranges)
            self._known.clear()
            self._known.update(saved_known)
            del self._facts[saved_facts:]
            self._engine.invalidate()

    def simplify(self, expr: E.ExprLike) -> E.Expr:
        """An equivalent, simpler expression of the same dtype."""
        return self._engine.simplify(E.convert(expr))

    def bound(self, expr: E.ExprLike) -> Interval:
        """An interval holding every value of `expr`, tightened by simplifying it first."""
        e = E.convert(expr)
        iv = self._engine.bound(e)
        if is_signed_int(e.dtype):
            engine = self._engine
            iv = iv.intersect(engine.poly_bound(engine.to_poly(engine.simplify(e))))
        return iv

    def can_prove(self, condition: E.ExprLike) -> bool:
        """True when `condition` holds for every value of the variables; False when unknown."""
        if self._prove(condition):
            return True
        facts = _DIVISIBLE.get()
        return bool(facts) and self._prove_with_multiples(E.convert(condition), facts)

    def _prove(self, condition: E.ExprLike) -> bool:
        c = self.simplify(condition)
        if isinstance(c, E.IntImm):
            return bool(c.value)
        if isinstance(c, E.And):
            return self._prove(c.a) and self._prove(c.b)
        if isinstance(c, E.Or):
            return self._prove(c.a) or self._prove(c.b)
        return False

    def _prove_with_multiples(self, condition: E.Expr, facts: tuple[tuple[E.Var, int], ...]) -> bool:
        """Prove `condition` with each assumed var `v` (a multiple of n) written as `n * q`, `q` a fresh
        var whose range is `v`'s divided by n."""
        from tilecraft.ir.visitor import free_vars, substitute

        present = set(free_vars(condition))
        used = [(v, n) for v, n in facts if v in present and n > 1]
        if not used:
            return False
        mapping, ranges = {}, {}
        for v, n in used:
            q = E.Var(v.dtype, f"{v.name}_div{n}")
            mapping[v] = E.mul(q, n)
            iv = self._ranges.get(v)
            lo = 0 if iv is None or iv.lo is None else -(-iv.lo // n)
            ranges[q] = (lo, None if iv is None or iv.hi is None else iv.hi // n)
        other = Analyzer({**self._ranges, **ranges})
        for fact in self._facts:
            other._facts.append(fact)
        return other._prove(substitute(condition, mapping))

    def can_prove_equal(self, a: E.ExprLike, b: E.ExprLike) -> bool:
        """True when `a` and `b` are proven to have the same value."""
        a, b = E.match_types(a, b)
        engine = self._engine
        sa, sb = engine.simplify(a), engine.simplify(b)
        if is_signed_int(sa.dtype):
            diff = engine.to_poly(sa).sub(engine.to_poly(sb))
            return diff.is_zero or (
                engine.prove_nonpositive(diff) and engine.prove_nonpositive(diff.scale(-1))
            )
        return engine.key(sa) == engine.key(sb)

    # ------------------------------------------------------------ internals

    def _interval(self, value: Any) -> Interval:
        if isinstance(value, Range):
            last = E.sub(E.add(value.min, value.extent), 1)
            return Interval(self.bound(value.min).lo, self.bound(last).hi)
        if isinstance(value, E.Expr):
            return self.bound(value)
        if isinstance(value, tuple) and len(value) == 2:
            lo, hi = value
            lo = self.bound(lo).lo if isinstance(lo, E.Expr) else lo
            hi = self.bound(hi).hi if isinstance(hi, E.Expr) else hi
            return Interval.of((lo, hi))
        return Interval.of(value)

    def _remember(self, c: E.Expr) -> None:
        """Record `c` and the parts of a conjunction as true and their negations as false."""
        self._remember_one(c)
        if isinstance(c, E.And):
            self._remember(c.a)
            self._remember(c.b)

    def _remember_one(self, c: E.Expr) -> None:
        if isinstance(c, E.IntImm):
            return
        engine = self._engine
        negation = self.simplify(E.Not(c.dtype, c))
        self._known[engine.key(c)] = True
        if not isinstance(negation, E.IntImm):
            self._known[engine.key(negation)] = False
        engine.invalidate()

    def _assume(self, c: E.Expr) -> None:
        engine = self._engine
        self._remember_one(c)
        if isinstance(c, E.And):
            self._assume(c.a)
            self._assume(c.b)
        elif isinstance(c, E.CmpOp) and is_signed_int(c.a.dtype):
            diff = engine.to_poly(c.a).sub(engine.to_poly(c.b))
            for fact in _facts_of(type(c).__name__, diff):
                self._facts.append(fact)
                self._narrow(fact)
                engine.invalidate()

    def _narrow(self, fact: Poly) -> None:
        """Narrow the range of each variable `v` in a fact `k*v + rest <= 0`."""
        engine = self._engine
        for mono, (coef, atoms) in fact.terms.items():
            var = atoms[0]
            if len(atoms) != 1 or not isinstance(var, E.Var):
                continue
            rest_lo = engine.poly_bound(fact.sub(Poly({mono: (coef, atoms)}))).lo
            if rest_lo is None:
                continue
            limit = -rest_lo  # coef * var <= limit
            if coef > 0:
                narrowed = Interval(None, limit // coef)
            else:
                narrowed = Interval(-(-limit // coef), None)
            known = self._ranges.get(var)
            current = dtype_interval(var.dtype) if known is None else known
            self._ranges[var] = current.intersect(narrowed)
            engine.invalidate()


def _facts_of(op: str, diff: Poly) -> list[Poly]:
    """The polynomials that are `<= 0` when `a <op> b` holds, given `diff = a - b`."""
    negated = diff.scale(-1)
    return {
        "LT": [diff.shift(1)],
        "LE": [diff],
        "GT": [negated.shift(1)],
        "GE": [negated],
        "EQ": [diff, negated],
    }.get(op, [])


def simplify(expr: E.ExprLike, ranges: Mapping[E.Var, Any] | None = None) -> E.Expr:
    """Simplify `expr` given the inclusive `ranges` of its variables (see `Analyzer`)."""
    return Analyzer(ranges).simplify(expr)


def can_prove(condition: E.ExprLike, ranges: Mapping[E.Var, Any] | None = None) -> bool:
    """Whether `condition` provably holds given the inclusive `ranges` of its variables."""
    return Analyzer(ranges).can_prove(condition)
