"""guard-accesses: global-memory accesses of `T.Parallel` tile code never leave their buffer.

A kernel author writes a `T.Parallel` nest for a whole tile (`C[by * 64 + i, bx * 64 + j] = acc[i, j]`)
and the last tiles of a tensor whose size is not a multiple of the tile run past its edge. Inside a
`T.Parallel` nest, every load and store of a global buffer whose indices use a variable of the nest
(directly or through a name bound to an expression of one) is checked dim by dim: `0 <= index` and
`index < dim`. Each bound the analyzer proves from what the IR says (loop extents, the launch grid,
non-negative dims, the `if` conditions around the access, names bound to index expressions) is dropped,
so an access that provably stays inside costs nothing. What remains becomes a predicate: a load out of
bounds reads zero, a store (or a scalar atomic update) out of bounds is skipped.

Bounds are only proven for index arithmetic, which is exact (docs/language.md, "Integer arithmetic");
an index computed from data always keeps its guard. Shared and local buffers are on-chip tiles the
kernel sizes itself and are not guarded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import Analyzer, Interval
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.buffer import Buffer, Range
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import BufferKeepingMutator, free_vars

__all__ = ["guard_accesses", "guard_func"]

GUARDED_SCOPES = ("global",)


class _Guard(BufferKeepingMutator):
    def __init__(self, func: PrimFunc) -> None:
        super().__init__()
        self.ana = Analyzer()
        self.exact = ExactTable()
        # Variables of enclosing T.Parallel loops, and names bound to expressions that use them.
        self.tile_vars: set[E.Var] = set()
        for dim in func.symbolic_dims:
            self.ana.bind(dim, Interval(0, None))

    # ------------------------------------------------------------------ the facts in scope

    def _uses_tile_vars(self, node) -> bool:
        return bool(self.tile_vars) and any(v in self.tile_vars for v in free_vars(node))

    def _is_index(self, e: E.Expr) -> bool:
        return self.exact.is_index(e)

    @contextmanager
    def _assuming(self, cond: E.Expr | None) -> Iterator[None]:
        facts = [c for c in _conjuncts(cond) if self._is_index(c)] if cond is not None else []
        if not facts:
            yield
            return
        fact = facts[0]
        for c in facts[1:]:
            fact = E.logical_and(fact, c)
        with self.ana.constraint(fact):
            yield

    def mutate_KernelLaunch(self, s: S.KernelLaunch) -> S.Stmt:
        for var, extent in zip(s.block_vars, s.grid):
            self.ana.bind(var, Range(E.const(0, extent.dtype), extent))
        for var, count in zip(s.thread_vars, s.threads):
            self.ana.bind(var, Interval(0, count - 1))
        return dataclasses.replace(s, body=self.mutate(s.body))

    def mutate_For(self, s: S.For) -> S.Stmt:
        is_tile = s.kind is S.ForKind.PARALLEL
        if is_tile:
            self.tile_vars.add(s.loop_var)
        try:
            with self.ana.binding(s.loop_var, Range(s.min, s.extent)):
                return self.generic_mutate(s)
        finally:
            if is_tile:
                self.tile_vars.discard(s.loop_var)

    def mutate_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        value = self.mutate(s.value)
        derived = self._uses_tile_vars(s.value)
        if derived:
            self.tile_vars.add(s.var)
        try:
            if s.var.dtype.is_integer and self._is_index(s.value):
                with self.ana.binding(s.var, self.ana.bound(s.value)):
                    body = self.mutate(s.body)
            else:
                if s.var.dtype.is_integer:
                    self.exact.data_vars.add(s.var)
                body = self.mutate(s.body)
        finally:
            self.tile_vars.discard(s.var)
        return S.LetStmt(s.var, value, body, span=s.span)

    def mutate_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        cond = self.mutate(s.condition)
        with self._assuming(s.condition):
            then_case = self.mutate(s.then_case)
        else_case = None
        if s.else_case is not None:
            with self._assuming(E.logical_not(s.condition)):
                else_case = self.mutate(s.else_case)
        return S.IfThenElse(cond, then_case, else_case, span=s.span)

    # ------------------------------------------------------------------ the guards

    def _guard(self, buf: Buffer, indices) -> E.Expr | None:
        """The conjunction of the bounds this access may break, or None when it cannot break any."""
        if buf.scope not in GUARDED_SCOPES or not self._uses_tile_vars(indices):
            return None
        conds = []
        for index, dim in zip(indices, buf.shape):
            for cond in (E.compare(E.GE, index, E.const(0, index.dtype)), E.compare(E.LT, index, dim)):
                if not (self._is_index(cond) and self.ana.can_prove(cond)):
                    conds.append(cond)
        result = None
        for c in conds:
            result = c if result is None else E.logical_and(result, c)
        return result

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.mutate(i) for i in e.indices)
        load = (
            e if all(a is b for a, b in zip(indices, e.indices)) else E.BufferLoad(e.dtype, e.buffer, indices)
        )
        guard = self._guard(e.buffer, indices)
        return load if guard is None else E.select(guard, load, E.const(0, e.dtype))

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        indices = tuple(self.mutate(i) for i in s.indices)
        guard = self._guard(s.buffer, indices)
        # The stored value is computed under the store's guard, so its loads need not repeat it.
        with self._assuming(guard):
            value = self.mutate(s.value)
        store = S.BufferStore(s.buffer, value, indices, span=s.span)
        return store if guard is None else S.IfThenElse(guard, store, span=s.span)

    def mutate_AtomicValue(self, e: E.AtomicValue) -> E.Expr:
        """An atomic expression out of bounds is not made: a load or an update gives zero."""
        indices = tuple(self.mutate(i) for i in e.target.indices)
        target = E.BufferLoad(e.target.dtype, e.target.buffer, indices)
        guard = self._guard(e.target.buffer, indices)
        with self._assuming(guard):
            value = None if e.value is None else self.mutate(e.value)
        atomic = dataclasses.replace(e, target=target, value=value)
        return atomic if guard is None else E.select(guard, atomic, E.const(0, e.dtype))

    def mutate_Evaluate(self, s: S.Evaluate) -> S.Stmt:
        """An atomic store out of bounds is skipped, as a store is."""
        if not (isinstance(s.value, E.AtomicValue) and s.value.kind == "store"):
            return self.generic_mutate(s)
        e = s.value
        indices = tuple(self.mutate(i) for i in e.target.indices)
        guard = self._guard(e.target.buffer, indices)
        with self._assuming(guard):
            value = self.mutate(e.value)
        target = E.BufferLoad(e.target.dtype, e.target.buffer, indices)
        stmt = S.Evaluate(dataclasses.replace(e, target=target, value=value), span=s.span)
        return stmt if guard is None else S.IfThenElse(guard, stmt, span=s.span)

    def mutate_AtomicOp(self, s: S.AtomicOp) -> S.Stmt:
        op = self.generic_mutate(s)
        if not all(E.const_value(r.extent) == 1 for r in op.dst.ranges):
            return op  # a region atomic is a tile op: its lowering guards the region's edges
        guard = self._guard(op.dst.buffer, tuple(r.min for r in op.dst.ranges))
        return op if guard is None else S.IfThenElse(guard, op, span=s.span)


def _conjuncts(e: E.Expr) -> list[E.Expr]:
    if isinstance(e, E.And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def guard_func(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Guard(func).mutate(func.body))


@module_pass("guard-accesses")
def guard_accesses(mod: IRModule, ctx) -> IRModule:
    """Global loads and stores of T.Parallel tile code stay in bounds: unprovable ones are predicated."""
    return mod.with_functions(guard_func(f) for f in mod.functions)
