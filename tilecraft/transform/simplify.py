"""Simplify index arithmetic with what the IR says about variable ranges.

Loop variables range over their loops, block and thread indices over the launch, symbolic dims are
non-negative, and `if` conditions hold inside their branches. Index expressions, loop bounds, `if`
conditions and integer lets are simplified under those facts; branches decided by them are removed.
Only index arithmetic is rewritten (`tilecraft/ir/arith/exact.py`): integer arithmetic on data wraps
around, so the rules of the integers do not hold for it; floating-point arithmetic is never
reassociated either.
"""

from __future__ import annotations

import contextlib
import functools

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import Analyzer, Interval
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.buffer import Range
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import BufferKeepingMutator


class Simplifier(BufferKeepingMutator):
    """Simplifies the integer "roots" of a tree: indices, bounds, conditions and integer values."""

    def __init__(self, analyzer: Analyzer | None = None) -> None:
        super().__init__()
        self.ana = analyzer or Analyzer()
        self.exact = ExactTable()

    def root(self, e: E.Expr) -> E.Expr:
        return self._simplified(self.mutate(e))

    def _simplified(self, e: E.Expr) -> E.Expr:
        if self.exact.is_index(e):
            return self.ana.simplify(e)
        if isinstance(e, E.And):
            return E.logical_and(self._simplified(e.a), self._simplified(e.b))
        if isinstance(e, E.Or):
            return E.logical_or(self._simplified(e.a), self._simplified(e.b))
        return e

    @contextlib.contextmanager
    def assuming(self, condition: E.Expr):
        """`condition` holds inside the block; only its index conjuncts become facts (data may wrap)."""
        facts = [c for c in _conjuncts(condition) if self.exact.is_index(c)]
        if not facts:
            yield
            return
        with self.ana.constraint(functools.reduce(E.logical_and, facts)):
            yield

    # ------------------------------------------------------------------ expressions

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.root(i) for i in e.indices)
        return (
            e if all(a is b for a, b in zip(indices, e.indices)) else E.BufferLoad(e.dtype, e.buffer, indices)
        )

    def mutate_Select(self, e: E.Select) -> E.Expr:
        cond = self.root(e.condition)
        if isinstance(cond, E.IntImm):
            return self.mutate(e.true_value if cond.value else e.false_value)
        with self.assuming(cond):
            t = self.mutate(e.true_value)
        with self.assuming(E.logical_not(cond)):
            f = self.mutate(e.false_value)
        return E.Select(e.dtype, cond, t, f)

    def mutate_Range(self, r: Range) -> Range:
        return Range(self.root(r.min), self.root(r.extent))

    # ------------------------------------------------------------------ statements

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        indices = tuple(self.root(i) for i in s.indices)
        value = self.root(s.value)
        return S.BufferStore(s.buffer, value, indices, span=s.span)

    def mutate_For(self, s: S.For) -> S.Stmt:
        lo, extent = self.root(s.min), self.root(s.extent)
        if isinstance(extent, E.IntImm) and extent.value <= 0:
            return S.SeqStmt(())
        if s.kind is S.ForKind.PARALLEL and E.const_value(extent) == 1:
            # Keep the variable: backends match T.Parallel variables against tile indices.
            return S.For(s.loop_var, lo, extent, s.kind, self.mutate(s.body), s.annotations, span=s.span)
        with self.ana.binding(s.loop_var, Range(lo, extent)):
            body = self.mutate(s.body)
        return S.For(s.loop_var, lo, extent, s.kind, body, s.annotations, span=s.span)

    def mutate_While(self, s: S.While) -> S.Stmt:
        # The body changes what the condition reads, so the condition is no fact inside the body.
        cond = self.root(s.condition)
        if isinstance(cond, E.IntImm) and not cond.value:
            return S.SeqStmt(())
        return S.While(cond, self.mutate(s.body), span=s.span)

    def mutate_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        cond = self.root(s.condition)
        if isinstance(cond, E.IntImm):
            chosen = s.then_case if cond.value else s.else_case
            return self.mutate(chosen) if chosen is not None else S.SeqStmt(())
        with self.assuming(cond):
            then_case = self.mutate(s.then_case)
        else_case = None
        if s.else_case is not None:
            with self.assuming(E.logical_not(cond)):
                else_case = self.mutate(s.else_case)
        return S.IfThenElse(cond, then_case, else_case, span=s.span)

    def mutate_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        value = self.root(s.value)
        if not s.var.dtype.is_integer:
            return S.LetStmt(s.var, value, self.mutate(s.body), span=s.span)
        if not self.exact.is_index(value):
            self.exact.data_vars.add(s.var)
            return S.LetStmt(s.var, value, self.mutate(s.body), span=s.span)
        with self.ana.binding(s.var, self.ana.bound(value)):
            body = self.mutate(s.body)
        return S.LetStmt(s.var, value, body, span=s.span)

    def mutate_KernelLaunch(self, s: S.KernelLaunch) -> S.Stmt:
        grid = tuple(self.root(g) for g in s.grid)
        bindings = [(v, Range(E.const(0, g.dtype), g)) for v, g in zip(s.block_vars, grid)]
        bindings += [(v, Interval(0, t - 1)) for v, t in zip(s.thread_vars, s.threads)]
        for var, rng in bindings:
            self.ana.bind(var, rng)
        body = self.mutate(s.body)
        return S.KernelLaunch(grid, s.threads, s.block_vars, s.thread_vars, body, s.annotations, span=s.span)


def _conjuncts(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def simplify_func(func: PrimFunc) -> PrimFunc:
    ana = Analyzer()
    for dim in func.symbolic_dims:
        ana.bind(dim, Interval(0, None))
    return func.with_body(Simplifier(ana).mutate(func.body))


def apply_simplify(func: PrimFunc | IRModule, inline_let: bool = False) -> PrimFunc | IRModule:
    """TileLang's `tilelang.transform.simplify.apply_simplify`: the PrimFunc (or each function of the
    module) with its index arithmetic simplified, as the pipelines' `simplify` pass does. `inline_let` is
    accepted for TileLang's signature; tilecraft's simplifier has no let-inlining option."""
    if isinstance(func, IRModule):
        return func.with_functions(simplify_func(f) for f in func.functions)
    if not isinstance(func, PrimFunc):
        raise TypeError(f"apply_simplify takes a @T.prim_func or an IRModule, not {type(func).__name__}")
    return simplify_func(func)


@module_pass("simplify")
def simplify_pass(mod: IRModule, ctx) -> IRModule:
    """Index arithmetic is simplified under the loop, launch and branch facts; decided branches are gone."""
    return mod.with_functions(simplify_func(f) for f in mod.functions)
