"""Canonical sums of products for signed integer index arithmetic.

An expression built from `+`, `-`, `*` and constants is a polynomial over *atoms* (variables and
any other sub-expression: divisions, min/max, loads, casts...). A `Poly` maps each monomial (a sorted
multiset of atoms) to its integer coefficient. Atoms are identified by a `KeyTable` key, which is
equal for the same value (structurally equal sub-expressions over the same Var objects) and totally
ordered, so that converting back to an expression gives a deterministic term order.
"""

from __future__ import annotations

import math
from collections import Counter
from operator import itemgetter

from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType
from tilecraft.ir.visitor import _field_names

__all__ = ["KeyTable", "Poly", "poly_to_expr", "split_divisible"]

Key = tuple
Term = tuple[int, tuple[E.Expr, ...]]  # (coefficient, atoms in key order)

# Key ranks: Vars sort before compound atoms, so `i + j // 8` keeps the loop variable first.
_VAR, _NODE, _INT, _FLOAT, _STRING, _LOAD, _CALL, _FIELD = range(8)


class KeyTable:
    """Ordered keys that identify expressions by value.

    Vars and buffers are told apart by identity: each gets a serial number the first time it is
    seen, which only breaks ties between different variables of the same name and dtype.
    """

    def __init__(self) -> None:
        self._serial: dict[object, int] = {}
        self._keys: dict[E.Expr, Key] = {}

    def serial(self, obj: object) -> int:
        number = self._serial.get(obj)
        if number is None:
            number = self._serial[obj] = len(self._serial)
        return number

    def key(self, e: E.Expr) -> Key:
        """The key of `e`; equal keys mean equal values."""
        k = self._keys.get(e)
        if k is None:
            k = self._keys[e] = self._make(e)
        return k

    def _make(self, e: E.Expr) -> Key:
        t = type(e)
        name = e.dtype.name if e.dtype.lanes == 1 else str(e.dtype)
        if t is E.Var:
            return (_VAR, e.name, name, self.serial(e))
        if t is E.IntImm:
            return (_INT, name, e.value)
        if t is E.FloatImm:
            return (_FLOAT, name, repr(e.value))
        if t is E.StringImm:
            return (_STRING, e.value)
        if t is E.BufferLoad:
            return (_LOAD, e.buffer.name, self.serial(e.buffer), name, tuple(self.key(i) for i in e.indices))
        if t is E.Call:
            return (_CALL, e.op, name, tuple(self.key(a) for a in e.args))
        fields = []
        for field in _field_names(t):
            if field == "dtype":
                continue
            value = getattr(e, field)
            fields.append(self.key(value) if isinstance(value, E.Expr) else (_FIELD, repr(value)))
        return (_NODE, t.__name__, name, *fields)


class Poly:
    """`const + sum(coef * prod(atoms))`: an immutable canonical polynomial with int coefficients."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict[Key, Term] | None = None, const: int = 0) -> None:
        self.terms: dict[Key, Term] = {} if terms is None else terms
        self.const = const

    @staticmethod
    def constant(value: int) -> Poly:
        return Poly(None, value)

    @staticmethod
    def atom(key: Key, expr: E.Expr) -> Poly:
        return Poly({(key,): (1, (expr,))})

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def is_zero(self) -> bool:
        return not self.terms and self.const == 0

    def single_atom(self) -> E.Expr | None:
        """The atom when the polynomial is exactly one atom (coefficient 1, no constant)."""
        if self.const != 0 or len(self.terms) != 1:
            return None
        coef, atoms = next(iter(self.terms.values()))
        return atoms[0] if coef == 1 and len(atoms) == 1 else None

    def add(self, other: Poly, scale: int = 1) -> Poly:
        """`self + scale * other`."""
        terms = dict(self.terms)
        for mono, (coef, atoms) in other.terms.items():
            old = terms.get(mono)
            total = coef * scale + (old[0] if old is not None else 0)
            if total:
                terms[mono] = (total, atoms)
            else:
                terms.pop(mono, None)
        return Poly(terms, self.const + scale * other.const)

    def sub(self, other: Poly) -> Poly:
        return self.add(other, -1)

    def shift(self, value: int) -> Poly:
        """`self + value`."""
        return Poly(self.terms, self.const + value)

    def scale(self, factor: int) -> Poly:
        if factor == 0:
            return Poly()
        return Poly({m: (c * factor, a) for m, (c, a) in self.terms.items()}, self.const * factor)

    def mul(self, other: Poly) -> Poly:
        if self.is_const:
            return other.scale(self.const)
        if other.is_const:
            return self.scale(other.const)
        # (A + a)(B + b) = A*b + a*B + a*b + A*B, the last product term by term.
        result = self.scale(other.const).add(Poly(other.terms), self.const)
        terms = dict(result.terms)
        for mono_a, (coef_a, atoms_a) in self.terms.items():
            for mono_b, (coef_b, atoms_b) in other.terms.items():
                pairs = sorted(zip(mono_a + mono_b, atoms_a + atoms_b), key=itemgetter(0))
                mono = tuple(k for k, _ in pairs)
                old = terms.get(mono)
                total = coef_a * coef_b + (old[0] if old is not None else 0)
                if total:
                    terms[mono] = (total, tuple(a for _, a in pairs))
                else:
                    terms.pop(mono, None)
        return Poly(terms, result.const)

    def coefficient_gcd(self) -> int:
        """The gcd of the non-constant coefficients (0 for a constant)."""
        return math.gcd(*(c for c, _ in self.terms.values())) if self.terms else 0

    def exact_div(self, divisor: int) -> Poly:
        """`self / divisor`; every coefficient and the constant must be multiples of it."""
        return Poly({m: (c // divisor, a) for m, (c, a) in self.terms.items()}, self.const // divisor)


def split_divisible(poly: Poly, mono: tuple[Key, ...], coef: int) -> tuple[Poly, Poly]:
    """Split `poly` into `d * quotient + rest` for the divisor term `d = coef * prod(mono)`.

    A term goes to the quotient when its monomial contains `mono` and its coefficient is a multiple
    of `coef`; for a constant divisor the constant is split so that `rest.const` is `const mod coef`.
    """
    need = Counter(mono)
    quotient: dict[Key, Term] = {}
    rest: dict[Key, Term] = {}
    for m, (c, atoms) in poly.terms.items():
        if c % coef == 0 and _contains(m, need):
            left = _remove(m, atoms, need)
            if left is None:
                # The term is a constant multiple of the divisor itself.
                quotient_const = c // coef
                quotient[()] = (quotient.get((), (0, ()))[0] + quotient_const, ())
            else:
                quotient[left[0]] = (c // coef, left[1])
        else:
            rest[m] = (c, atoms)
    q_const = quotient.pop((), (0, ()))[0]
    r_const = poly.const
    if not mono:
        q_extra, r_const = divmod(poly.const, coef)
        q_const += q_extra
    return Poly(quotient, q_const), Poly(rest, r_const)


def _contains(mono: tuple[Key, ...], need: Counter) -> bool:
    if not need:
        return True
    have = Counter(mono)
    return all(have[k] >= n for k, n in need.items())


def _remove(
    mono: tuple[Key, ...], atoms: tuple[E.Expr, ...], need: Counter
) -> tuple[tuple[Key, ...], tuple[E.Expr, ...]] | None:
    """`mono` with the multiset `need` taken out, or None when nothing is left."""
    left = Counter(need)
    keys, kept = [], []
    for k, a in zip(mono, atoms):
        if left[k] > 0:
            left[k] -= 1
        else:
            keys.append(k)
            kept.append(a)
    return (tuple(keys), tuple(kept)) if keys else None


# ---------------------------------------------------------------- back to expressions


def wrap_int(value: int, dtype: DataType) -> int:
    """`value` wrapped to the width of the integer `dtype`, as the generated code computes it."""
    bits = dtype.bits
    if dtype.kind == "uint":
        return value & ((1 << bits) - 1)
    half = 1 << (bits - 1)
    return value if -half <= value < half else ((value + half) & ((1 << bits) - 1)) - half


def int_const(value: int, dtype: DataType) -> E.IntImm:
    return E.IntImm(dtype, wrap_int(value, dtype))


def _product(atoms: tuple[E.Expr, ...], coef: int, dtype: DataType) -> E.Expr:
    result = atoms[0]
    for atom in atoms[1:]:
        result = E.Mul(dtype, result, atom)
    return result if coef == 1 else E.Mul(dtype, result, int_const(coef, dtype))


def poly_to_expr(poly: Poly, dtype: DataType) -> E.Expr:
    """The expression of `poly`: positive terms in key order, then negative ones, then the constant."""
    ordered = sorted(poly.terms.items(), key=itemgetter(0))
    positive = [(atoms, c) for _, (c, atoms) in ordered if c > 0]
    negative = [(atoms, -c) for _, (c, atoms) in ordered if c < 0]
    const = poly.const
    result: E.Expr | None = None
    for atoms, c in positive:
        term = _product(atoms, c, dtype)
        result = term if result is None else E.Add(dtype, result, term)
    if result is None:
        if const > 0 and negative:
            result, const = int_const(const, dtype), 0
        elif negative:
            atoms, c = negative.pop(0)
            result = _product(atoms, -c, dtype)
        else:
            return int_const(const, dtype)
    for atoms, c in negative:
        result = E.Sub(dtype, result, _product(atoms, c, dtype))
    if const > 0:
        result = E.Add(dtype, result, int_const(const, dtype))
    elif const < 0:
        result = E.Sub(dtype, result, int_const(-const, dtype))
    return result
