"""Rewrite rules of the simplifier, one function per node kind.

Every rule receives the `Simplifier` and the original node, simplifies the operands it needs and
returns an equivalent expression of the same dtype. Signed integer arithmetic goes through canonical
polynomials and the division, min/max and comparison rules below; everything else (floats, unsigned
and bool arithmetic) is only constant-folded, so floating-point operations are never reassociated.

The integer rules assume that index arithmetic does not overflow, as C compilers do; the rules for
division and remainder apply only when their preconditions are proven, for either sign of operands.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from tilecraft.ir import expr as E
from tilecraft.ir.arith.bounds import dtype_interval
from tilecraft.ir.arith.canonical import Poly, int_const, split_divisible
from tilecraft.ir.dtype import DataType
from tilecraft.ir.eval import SUPPORTED_INTRINSICS, cast_value, evaluate
from tilecraft.ir.visitor import _field_names

if TYPE_CHECKING:
    from tilecraft.ir.arith.simplifier import Simplifier

Rule = Callable[["Simplifier", E.Expr], E.Expr]


def is_signed_int(dtype: DataType) -> bool:
    """Whether expressions of `dtype` take part in canonical (polynomial) simplification."""
    return dtype.kind == "int" and dtype.lanes == 1


# ---------------------------------------------------------------- generic: rebuild and fold

_FOLDABLE = (E.BinaryOp, E.Not, E.Select, E.Cast, E.Call)


def make_const(value: bool | int | float, dtype: DataType) -> E.Expr:
    """A constant node holding an already converted value of `dtype`."""
    if dtype.is_float:
        return E.FloatImm(dtype, float(value))
    return E.IntImm(dtype, int(value))


def fold(e: E.Expr) -> E.Expr:
    """`e` evaluated when all its operands are constants and the evaluation is defined."""
    if not isinstance(e, _FOLDABLE):
        return e
    if isinstance(e, E.Call) and e.op not in SUPPORTED_INTRINSICS:
        return e
    for name in _field_names(type(e)):
        value = getattr(e, name)
        if isinstance(value, E.Expr) and not isinstance(value, (E.IntImm, E.FloatImm)):
            return e
        if isinstance(value, tuple) and not all(isinstance(v, (E.IntImm, E.FloatImm)) for v in value):
            return e
    try:
        return make_const(evaluate(e), e.dtype)
    except (ValueError, ArithmeticError):
        return e


def generic(s: Simplifier, e: E.Expr) -> E.Expr:
    """Simplify every operand, rebuild the node if one changed, then fold constants."""
    changes = {}
    for name in _field_names(type(e)):
        old = getattr(e, name)
        if isinstance(old, E.Expr):
            new = s.simplify(old)
            if new is not old:
                changes[name] = new
        elif isinstance(old, tuple) and old and isinstance(old[0], E.Expr):
            items = tuple(s.simplify(v) for v in old)
            if any(a is not b for a, b in zip(items, old)):
                changes[name] = items
    return fold(dataclasses.replace(e, **changes) if changes else e)


def _rebuild(e: E.BinaryOp, a: E.Expr, b: E.Expr) -> E.Expr:
    return e if a is e.a and b is e.b else type(e)(e.dtype, a, b)


# ---------------------------------------------------------------- sums of products


def rewrite_sum(s: Simplifier, e: E.BinaryOp) -> E.Expr:
    """`+`, `-`, `*`: collect like terms into a canonical polynomial."""
    if not is_signed_int(e.dtype):
        return generic(s, e)
    return s.from_poly(merge_divmod(s, s.to_poly(e)), e.dtype)


_DIV_OF_MOD = {E.FloorMod: "FloorDiv", E.TruncMod: "Div"}


def merge_divmod(s: Simplifier, poly: Poly) -> Poly:
    """Fold `k*c*(x // c) + k*(x % c)` into `k*x` (also for `/` with C's `%`), as loop fusion needs."""
    while True:
        for mono, (coef, atoms) in poly.terms.items():
            atom = atoms[0]
            div_name = _DIV_OF_MOD.get(type(atom))
            if len(atoms) != 1 or div_name is None or not isinstance(atom.b, E.IntImm):
                continue
            mod_key = mono[0]
            div_mono = ((mod_key[0], div_name, *mod_key[2:]),)
            div_term = poly.terms.get(div_mono)
            if div_term is None or div_term[0] != coef * atom.b.value:
                continue
            poly = poly.sub(Poly({mono: (coef, atoms), div_mono: div_term})).add(s.to_poly(atom.a), coef)
            break
        else:
            return poly


# ---------------------------------------------------------------- division and remainder


def _divisor_term(s: Simplifier, b: E.Expr) -> tuple[tuple, int] | None:
    """`(monomial, coefficient)` when the divisor is a single nonzero term such as `8`, `n` or `4*n`."""
    poly = s.to_poly(b)
    if poly.is_const:
        return ((), poly.const) if poly.const != 0 else None
    if poly.const != 0 or len(poly.terms) != 1:
        return None
    mono, (coef, _) = next(iter(poly.terms.items()))
    return mono, coef


def _fits(value: int, dtype: DataType) -> bool:
    return dtype_interval(dtype).contains(value)


def _neg(s: Simplifier, a: E.Expr) -> E.Expr:
    return s.from_poly(s.to_poly(a).scale(-1), a.dtype)


def floordiv(s: Simplifier, a: E.Expr, b: E.Expr) -> E.Expr:
    """`a // b` for simplified signed-integer operands.

    `(b*q + r) // b == q + r // b` holds for any nonzero b; `r // b` is then decided by the bounds of r,
    reduced by a common factor, or merged with an inner constant division.
    """
    dtype = a.dtype
    c = b.value if isinstance(b, E.IntImm) else None
    if c == 0:
        return E.FloorDiv(dtype, a, b)
    if c is not None and isinstance(a, E.IntImm):
        return int_const(a.value // c, dtype)
    if c == 1:
        return a
    if c == -1:
        return _neg(s, a)
    divisor = _divisor_term(s, b)
    if divisor is None:
        return E.FloorDiv(dtype, a, b)
    quotient, rest = split_divisible(s.to_poly(a), *divisor)
    if rest.is_zero:
        return s.from_poly(quotient, dtype)
    rest_div = _floordiv_rest(s, rest, b, dtype)
    if quotient.is_zero:
        return rest_div
    return s.from_poly(quotient.add(s.to_poly(rest_div)), dtype)


def _floordiv_rest(s: Simplifier, rest: Poly, b: E.Expr, dtype: DataType) -> E.Expr:
    quotient = s.poly_bound(rest).floordiv(s.bound(b))
    if quotient.is_point:
        return int_const(quotient.lo, dtype)
    c = b.value if isinstance(b, E.IntImm) else None
    if c is not None and c > 0:
        # (g*X + r0) // (g*d) == X // d when 0 <= r0 < g.
        g = math.gcd(c, rest.coefficient_gcd())
        if g > 1:
            r0 = rest.const % g
            inner = s.from_poly(rest.shift(-r0).exact_div(g), dtype)
            return floordiv(s, inner, int_const(c // g, dtype))
        # (x // a) // c == x // (a*c) for c > 0.
        nested = rest.single_atom()
        if type(nested) is E.FloorDiv and isinstance(nested.b, E.IntImm) and nested.b.value != 0:
            product = nested.b.value * c
            if _fits(product, dtype):
                return floordiv(s, nested.a, int_const(product, dtype))
    return E.FloorDiv(dtype, s.from_poly(rest, dtype), b)


def floormod(s: Simplifier, a: E.Expr, b: E.Expr) -> E.Expr:
    """`a % b` (floor semantics) for simplified signed-integer operands.

    `(b*q + r) % b == r % b`; then `r % b == r - b*k` when `r // b` is a known constant k, a common
    factor is pulled out, or an inner remainder by a multiple of b is dropped.
    """
    dtype = a.dtype
    c = b.value if isinstance(b, E.IntImm) else None
    if c == 0:
        return E.FloorMod(dtype, a, b)
    if c is not None and isinstance(a, E.IntImm):
        return int_const(a.value % c, dtype)
    if c in (1, -1):
        return int_const(0, dtype)
    divisor = _divisor_term(s, b)
    if divisor is None:
        return E.FloorMod(dtype, a, b)
    _, rest = split_divisible(s.to_poly(a), *divisor)
    if rest.is_zero:
        return int_const(0, dtype)
    quotient = s.poly_bound(rest).floordiv(s.bound(b))
    if quotient.is_point:
        return s.from_poly(rest.sub(s.to_poly(b).scale(quotient.lo)), dtype)
    if c is not None:
        if c > 0:
            # (g*X + r0) % (g*d) == g*(X % d) + r0 when 0 <= r0 < g.
            g = math.gcd(c, rest.coefficient_gcd())
            if g > 1:
                r0 = rest.const % g
                inner = floormod(
                    s, s.from_poly(rest.shift(-r0).exact_div(g), dtype), int_const(c // g, dtype)
                )
                return s.from_poly(s.to_poly(inner).scale(g).shift(r0), dtype)
        # (x % a) % c == x % c when c divides a: both only depend on x's residue modulo c.
        nested = rest.single_atom()
        if type(nested) is E.FloorMod and isinstance(nested.b, E.IntImm) and nested.b.value % c == 0:
            return floormod(s, nested.a, b)
    return E.FloorMod(dtype, s.from_poly(rest, dtype), b)


def _nonnegative(s: Simplifier, e: E.Expr) -> bool:
    lo = s.bound(e).lo
    return lo is not None and lo >= 0


def _positive(s: Simplifier, e: E.Expr) -> bool:
    lo = s.bound(e).lo
    return lo is not None and lo >= 1


_TRUNC_OF = {E.FloorDiv: E.Div, E.FloorMod: E.TruncMod}


def _as_trunc(s: Simplifier, e: E.Expr) -> E.Expr:
    """Turn floor divisions in a result back into C's `/` and `%` where they agree (cheaper to emit)."""
    if not isinstance(e, (E.Add, E.Sub, E.Mul)):
        return _trunc_atom(s, e)
    poly = s.to_poly(e)
    result = Poly.constant(poly.const)
    for coef, atoms in poly.terms.values():
        term = Poly.constant(coef)
        for atom in atoms:
            term = term.mul(s.atom_poly(_trunc_atom(s, atom)))
        result = result.add(term)
    return s.from_poly(result, e.dtype)


def _trunc_atom(s: Simplifier, e: E.Expr) -> E.Expr:
    cls = _TRUNC_OF.get(type(e))
    if cls is not None and _nonnegative(s, e.a) and _positive(s, e.b):
        return cls(e.dtype, e.a, e.b)
    return e


def _rewrite_division(floor_rule: Callable, trunc: Callable[[int, int], int], unit: Callable) -> Rule:
    def rule(s: Simplifier, e: E.BinaryOp) -> E.Expr:
        if not is_signed_int(e.dtype):
            return generic(s, e)
        a, b = s.simplify(e.a), s.simplify(e.b)
        c = b.value if isinstance(b, E.IntImm) else None
        if c == 0:
            return _rebuild(e, a, b)
        if c is not None and isinstance(a, E.IntImm):
            return int_const(trunc(a.value, c), e.dtype)
        if c in (1, -1):
            return unit(s, a, c)
        if type(e) in (E.Div, E.TruncMod):
            # C's `/` and `%` equal the floor versions for a nonnegative dividend and positive divisor.
            if _nonnegative(s, a) and _positive(s, b):
                return _as_trunc(s, floor_rule(s, a, b))
            return _rebuild(e, a, b)
        return floor_rule(s, a, b)

    return rule


def _trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def _div_by_unit(s: Simplifier, a: E.Expr, c: int) -> E.Expr:
    return a if c == 1 else _neg(s, a)


def _mod_by_unit(s: Simplifier, a: E.Expr, c: int) -> E.Expr:
    return int_const(0, a.dtype)


rewrite_floordiv = _rewrite_division(floordiv, lambda x, y: x // y, _div_by_unit)
rewrite_floormod = _rewrite_division(floormod, lambda x, y: x % y, _mod_by_unit)
rewrite_truncdiv = _rewrite_division(floordiv, _trunc_div, _div_by_unit)
rewrite_truncmod = _rewrite_division(floormod, lambda x, y: x - y * _trunc_div(x, y), _mod_by_unit)


# ---------------------------------------------------------------- min / max


def rewrite_minmax(s: Simplifier, e: E.Min | E.Max) -> E.Expr:
    """Fold constants, equal operands and operands ordered by their bounds; constants go right."""
    if not is_signed_int(e.dtype):
        return generic(s, e)
    a, b = s.simplify(e.a), s.simplify(e.b)
    is_min = type(e) is E.Min
    if isinstance(a, E.IntImm) and isinstance(b, E.IntImm):
        return int_const(min(a.value, b.value) if is_min else max(a.value, b.value), e.dtype)
    if s.key(a) == s.key(b):
        return a
    diff = s.to_poly(a).sub(s.to_poly(b))
    if s.prove_nonpositive(diff):
        return a if is_min else b
    if s.prove_nonpositive(diff.scale(-1)):
        return b if is_min else a
    if isinstance(a, E.IntImm):
        a, b = b, a
    if isinstance(b, E.IntImm) and type(a) is type(e) and isinstance(a.b, E.IntImm):
        # min(min(x, c1), c2) == min(x, min(c1, c2))
        inner = a.b.value
        merged = min(inner, b.value) if is_min else max(inner, b.value)
        return type(e)(e.dtype, a.a, int_const(merged, e.dtype))
    return _rebuild(e, a, b)


# ---------------------------------------------------------------- comparisons and logic


def decide_compare(s: Simplifier, op: str, diff: Poly) -> bool | None:
    """Decide `a <op> b` from the polynomial `a - b`, using bounds and the analyzer's facts."""
    nonpositive = s.prove_nonpositive
    negated = diff.scale(-1)
    if op == "LT":
        return True if nonpositive(diff.shift(1)) else False if nonpositive(negated) else None
    if op == "LE":
        return True if nonpositive(diff) else False if nonpositive(negated.shift(1)) else None
    if op == "GT":
        return True if nonpositive(negated.shift(1)) else False if nonpositive(diff) else None
    if op == "GE":
        return True if nonpositive(negated) else False if nonpositive(diff.shift(1)) else None
    if diff.is_zero or (nonpositive(diff) and nonpositive(negated)):
        equal: bool | None = True
    elif nonpositive(diff.shift(1)) or nonpositive(negated.shift(1)):
        equal = False
    else:
        return None
    return equal if op == "EQ" else not equal


def rewrite_compare(s: Simplifier, e: E.CmpOp) -> E.Expr:
    a, b = s.simplify(e.a), s.simplify(e.b)
    if is_signed_int(a.dtype) and not (isinstance(a, E.IntImm) and isinstance(b, E.IntImm)):
        verdict = decide_compare(s, type(e).__name__, s.to_poly(a).sub(s.to_poly(b)))
        if verdict is not None:
            return E.IntImm(e.dtype, int(verdict))
    return fold(_rebuild(e, a, b))


def _is_true(e: E.Expr) -> bool | None:
    if isinstance(e, E.IntImm):
        return bool(e.value)
    return None


def rewrite_and(s: Simplifier, e: E.And) -> E.Expr:
    return _rewrite_connective(s, e, identity=True)


def rewrite_or(s: Simplifier, e: E.Or) -> E.Expr:
    return _rewrite_connective(s, e, identity=False)


def _rewrite_connective(s: Simplifier, e: E.And | E.Or, identity: bool) -> E.Expr:
    """`x op identity` is x, `x op (not identity)` is the constant, `x op x` is x (and: identity true;
    or: identity false)."""
    a, b = s.simplify(e.a), s.simplify(e.b)
    x, y = _is_true(a), _is_true(b)
    if x is not None:
        return b if x == identity else a
    if y is not None:
        return a if y == identity else b
    return a if s.key(a) == s.key(b) else _rebuild(e, a, b)


_INVERSE: dict[type, type] = {E.LT: E.GE, E.GE: E.LT, E.LE: E.GT, E.GT: E.LE, E.EQ: E.NE, E.NE: E.EQ}


def rewrite_not(s: Simplifier, e: E.Not) -> E.Expr:
    a = s.simplify(e.a)
    if isinstance(a, E.IntImm):
        return E.IntImm(e.dtype, int(not a.value))
    if type(a) is E.Not:
        return a.a
    inverse = _INVERSE.get(type(a))
    # Not inverted for floats: `not (x < y)` is true for NaN while `x >= y` is not.
    if inverse is not None and not a.a.dtype.is_float:
        return inverse(e.dtype, a.a, a.b)
    return e if a is e.a else E.Not(e.dtype, a)


def rewrite_select(s: Simplifier, e: E.Select) -> E.Expr:
    cond = s.simplify(e.condition)
    known = _is_true(cond)
    if known is not None:
        return s.simplify(e.true_value if known else e.false_value)
    t, f = s.simplify(e.true_value), s.simplify(e.false_value)
    if s.key(t) == s.key(f):
        return t
    if cond is e.condition and t is e.true_value and f is e.false_value:
        return e
    return E.Select(e.dtype, cond, t, f)


def rewrite_cast(s: Simplifier, e: E.Cast) -> E.Expr:
    """Fold constant casts and drop casts that cannot change the value; other casts stay atoms."""
    v = s.simplify(e.value)
    if v.dtype == e.dtype:
        return v
    if _is_round_trip(e.dtype, v):
        return v.value
    if isinstance(v, (E.IntImm, E.FloatImm)):
        try:
            return make_const(cast_value(v.value, e.dtype), e.dtype)
        except ValueError:
            pass
    return e if v is e.value else E.Cast(e.dtype, v)


def _is_round_trip(dtype: DataType, v: E.Expr) -> bool:
    """Whether `Cast(dtype, v)` undoes `v = Cast(wider, x)` of an integer `x` of `dtype`.

    Widening keeps the low bits of a two's complement integer and narrowing back keeps only them.
    """
    if type(v) is not E.Cast or v.value.dtype != dtype or not dtype.is_integer:
        return False
    return v.dtype.is_integer and v.dtype.lanes == dtype.lanes and v.dtype.bits >= dtype.bits


RULES: dict[type, Rule] = {
    E.Add: rewrite_sum,
    E.Sub: rewrite_sum,
    E.Mul: rewrite_sum,
    E.FloorDiv: rewrite_floordiv,
    E.FloorMod: rewrite_floormod,
    E.Div: rewrite_truncdiv,
    E.TruncMod: rewrite_truncmod,
    E.Min: rewrite_minmax,
    E.Max: rewrite_minmax,
    E.EQ: rewrite_compare,
    E.NE: rewrite_compare,
    E.LT: rewrite_compare,
    E.LE: rewrite_compare,
    E.GT: rewrite_compare,
    E.GE: rewrite_compare,
    E.And: rewrite_and,
    E.Or: rewrite_or,
    E.Not: rewrite_not,
    E.Select: rewrite_select,
    E.Cast: rewrite_cast,
}
