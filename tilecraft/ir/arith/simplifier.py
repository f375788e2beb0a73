"""The simplification engine: memoized bottom-up rewriting with polynomials, bounds and facts."""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir.arith import bounds as _bounds
from tilecraft.ir.arith.canonical import Key, KeyTable, Poly, poly_to_expr
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.arith.interval import Interval
from tilecraft.ir.arith.rewrite import RULES, generic
from tilecraft.ir.dtype import DataType

__all__ = ["MAX_PRODUCT_TERMS", "Simplifier"]

# Expanding a product of two sums stops here; larger products stay an opaque atom.
MAX_PRODUCT_TERMS = 64


class Simplifier:
    """Rewrites expressions under the variable ranges and facts it shares with an `Analyzer`.

    `facts` are polynomials known to be `<= 0` and `known` maps the keys of assumed conditions (and of
    their negations) to their truth value, both from `Analyzer.constraint`. Results are memoized by
    node identity; call `invalidate()` whenever the ranges, the facts or the known conditions change.
    """

    def __init__(self, ranges: dict[E.Var, Interval], facts: list[Poly], known: dict[Key, bool]) -> None:
        self.ranges = ranges
        self.facts = facts
        self.known = known
        self.keys = KeyTable()
        self._memo: dict[E.Expr, E.Expr] = {}
        self._bounds: dict[E.Expr, Interval] = {}
        self._polys: dict[E.Expr, Poly] = {}
        self._exact = ExactTable()  # structural, so it survives invalidate()

    def invalidate(self) -> None:
        self._memo.clear()
        self._bounds.clear()
        self._polys.clear()

    def key(self, e: E.Expr) -> Key:
        return self.keys.key(e)

    def simplify(self, e: E.Expr) -> E.Expr:
        """The simplified form of `e` (same dtype)."""
        out = self._memo.get(e)
        if out is None:
            rule = RULES.get(type(e), generic)
            out = self._decide_by_bound(rule(self, e))
            self._memo[e] = out
            self._memo[out] = out
        return out

    def _decide_by_bound(self, e: E.Expr) -> E.Expr:
        if isinstance(e, E.IntImm) or e.dtype.lanes != 1 or not (e.dtype.is_integer or e.dtype.is_bool):
            return e
        if self.known and e.dtype.is_bool:
            truth = self.known.get(self.key(e))
            if truth is not None:
                return E.IntImm(e.dtype, int(truth))
        iv = self.bound(e)
        return E.IntImm(e.dtype, iv.lo) if iv.is_point else e

    def bound(self, e: E.Expr) -> Interval:
        """The interval of `e` as written (no simplification), memoized."""
        return _bounds.bound(e, self.ranges, self._bounds, self._exact)

    # ------------------------------------------------------------ polynomials

    def to_poly(self, e: E.Expr) -> Poly:
        """The canonical polynomial of the signed integer expression `e`, its atoms simplified."""
        poly = self._polys.get(e)
        if poly is not None:
            return poly
        t = type(e)
        if t is E.IntImm:
            return Poly.constant(e.value)
        if t is E.Add:
            return self.to_poly(e.a).add(self.to_poly(e.b))
        if t is E.Sub:
            return self.to_poly(e.a).sub(self.to_poly(e.b))
        if t is E.Mul:
            return self._product(self.to_poly(e.a), self.to_poly(e.b), e)
        out = self.simplify(e)
        if out is not e:
            return self.to_poly(out)
        return self.atom_poly(e)

    def atom_poly(self, e: E.Expr) -> Poly:
        """The polynomial of the already simplified, non-arithmetic `e` (one atom)."""
        poly = self._polys.get(e)
        if poly is None:
            poly = self._polys[e] = Poly.atom(self.key(e), e)
            self._memo.setdefault(e, e)
        return poly

    def _product(self, a: Poly, b: Poly, e: E.Mul) -> Poly:
        if a.is_const or b.is_const or (len(a.terms) + 1) * (len(b.terms) + 1) <= MAX_PRODUCT_TERMS:
            return a.mul(b)
        return self.atom_poly(E.Mul(e.dtype, self.from_poly(a, e.dtype), self.from_poly(b, e.dtype)))

    def from_poly(self, poly: Poly, dtype: DataType) -> E.Expr:
        """The expression of `poly`, remembered so that converting it back is free."""
        e = poly_to_expr(poly, dtype)
        if not isinstance(e, E.IntImm):
            self._polys.setdefault(e, poly)
            self._memo[e] = e
        return e

    def poly_bound(self, poly: Poly) -> Interval:
        """An interval holding every value of `poly`, from the bounds of its atoms."""
        iv = Interval.point(poly.const)
        for coef, atoms in poly.terms.values():
            term = Interval.point(coef)
            for atom in atoms:
                term = term * self.bound(atom)
            iv = iv + term
        return iv

    def prove_nonpositive(self, poly: Poly) -> bool:
        """Whether `poly <= 0` follows from the bounds or from one of the facts."""
        if poly.is_const:
            return poly.const <= 0
        hi = self.poly_bound(poly).hi
        if hi is not None and hi <= 0:
            return True
        for fact in self.facts:
            # poly - fact <= 0 and fact <= 0 give poly <= 0.
            diff = poly.sub(fact)
            hi = diff.const if diff.is_const else self.poly_bound(diff).hi
            if hi is not None and hi <= 0:
                return True
        return False
