"""The exact set of values an index takes, where every one of them is certainly reached.

`IndexRanges` follows a traversal of a kernel: the variables of the loops around the current node that
run every iteration once the node is reached (a constant start and a constant extent of at least 1, and
no `if`, `while`, select branch or short-circuit operand between the loop and the node), and the names
`LetStmt`s bind. An index that is an affine sum of such loop variables, each counted once with an integer
coefficient, plus a constant, takes every value between its smallest and its largest: the loops are
independent and nothing skips an iteration. That is what lets a semantic check call an access out of
bounds without a false alarm. Any other index (a block index, data, a division) has no range here.

`RangeWalk` is the traversal that keeps an `IndexRanges` current through lets and through the branches of
`if`, `while` and selects; the semantic check and the fragment sizing of `widen_fragments` both build on
it, so they judge which accesses are certainly reached alike.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.visitor import Visitor


def constant(e: E.Expr) -> int | float | None:
    """The value of an expression without free variables, folded here because passes such as the
    specialization of `T.const` symbols substitute values without re-folding; None when it has any."""
    value = E.const_value(e)
    if value is not None:
        return value
    try:
        return evaluate(e)
    except (ValueError, ArithmeticError, TypeError):
        return None  # a Var, a load, an intrinsic: not a compile-time constant


class IndexRanges:
    """The loop variables whose every value is reached from the current node, and the bound names."""

    def __init__(self) -> None:
        self.loops: dict[E.Var, tuple[int, int]] = {}
        self.lets: dict[E.Var, E.Expr] = {}

    @contextmanager
    def loop(self, var: E.Var, first: object, extent: object) -> Iterator[None]:
        """Inside a loop's body; a loop that may run no iteration, or bounds only known at run time,
        makes its body conditional."""
        if not (_is_int(first) and _is_int(extent) and extent >= 1):
            with self.conditional():
                yield
            return
        self.loops[var] = (first, first + extent - 1)
        try:
            yield
        finally:
            del self.loops[var]

    @contextmanager
    def conditional(self) -> Iterator[None]:
        """Inside code that may run for only some iterations of the loops around it."""
        saved = self.loops
        self.loops = {}
        try:
            yield
        finally:
            self.loops = saved

    @contextmanager
    def let(self, var: E.Var, value: E.Expr) -> Iterator[None]:
        self.lets[var] = value
        try:
            yield
        finally:
            self.lets.pop(var, None)

    def range_of(self, index: E.Expr) -> tuple[int, int] | None:
        """(smallest, largest) value of `index`, every value between them reached; None when the index
        uses anything but the loop variables above (or is a plain constant, which has no loop to span)."""
        form = self._affine(index, depth=0)
        if form is None or not form[0]:
            return None
        terms, lo = form
        hi = lo
        for var, coef in terms.items():
            first, last = self.loops[var]
            lo += min(coef * first, coef * last)
            hi += max(coef * first, coef * last)
        return lo, hi

    def loop_vars(self, index: E.Expr) -> tuple[E.Var, ...]:
        """The loop variables `index` is an affine sum of (the ones `range_of` spans); () when it is not."""
        form = self._affine(index, depth=0)
        return () if form is None else tuple(form[0])

    def _affine(self, e: E.Expr, depth: int) -> tuple[dict[E.Var, int], int] | None:
        """`e` as {loop var: coefficient} plus a constant, or None."""
        if depth > 32 or not e.dtype.is_integer:
            return None
        if isinstance(e, E.IntImm):
            return {}, e.value
        if isinstance(e, E.Var):
            if e in self.loops:
                return {e: 1}, 0
            bound = self.lets.get(e)
            return None if bound is None else self._affine(bound, depth + 1)
        if isinstance(e, E.Cast):
            # Index casts widen (int32 -> int64); the values here are loop indices, far from wrapping.
            wide = e.value.dtype.is_integer and e.dtype.bits >= 32
            return self._affine(e.value, depth + 1) if wide else None
        if isinstance(e, (E.Add, E.Sub)):
            return _combine(
                self._affine(e.a, depth + 1), self._affine(e.b, depth + 1), 1 if isinstance(e, E.Add) else -1
            )
        if isinstance(e, E.Mul):
            for x, y in ((e.a, e.b), (e.b, e.a)):
                if isinstance(y, E.IntImm):
                    form = self._affine(x, depth + 1)
                    return (
                        None
                        if form is None
                        else ({v: c * y.value for v, c in form[0].items()}, form[1] * y.value)
                    )
        return None


def _combine(a, b, sign: int):
    if a is None or b is None:
        return None
    terms = dict(a[0])
    for var, coef in b[0].items():
        terms[var] = terms.get(var, 0) + sign * coef
    return {v: c for v, c in terms.items() if c}, a[1] + sign * b[1]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class RangeWalk(Visitor):
    """A traversal that keeps `self.ranges` current: the bodies of lets bind their names, and code that
    may not run (a `while` body, an `if` branch or a select operand whose condition is not constant) is
    conditional. Subclasses enter their loops with `self.ranges.loop`."""

    def __init__(self) -> None:
        self.ranges = IndexRanges()

    def visit_While(self, s: S.While) -> None:
        self.visit(s.condition)
        with self.ranges.conditional():
            self.visit(s.body)

    def visit_LetStmt(self, s: S.LetStmt) -> None:
        self.visit(s.value)
        with self.ranges.let(s.var, s.value):
            self.visit(s.body)

    def visit_IfThenElse(self, s: S.IfThenElse) -> None:
        """Only a branch that can run is judged: after `T.const` specialization a guard such as
        `if K % 32 != 0:` may be constant, and the code it skips (`x // (K % 32)`) never runs."""
        self.visit(s.condition)
        taken = constant(s.condition)
        with self._branches(taken):
            if taken is None or taken:
                self.visit(s.then_case)
            if s.else_case is not None and not taken:
                self.visit(s.else_case)

    def visit_Select(self, e: E.Select) -> None:
        self.visit(e.condition)
        taken = constant(e.condition)
        with self._branches(taken):
            if taken is None or taken:
                self.visit(e.true_value)
            if taken is None or not taken:
                self.visit(e.false_value)

    def _branches(self, taken):
        """A branch of a condition known only at run time may run for some iterations only."""
        return self.ranges.conditional() if taken is None else contextlib.nullcontext()
