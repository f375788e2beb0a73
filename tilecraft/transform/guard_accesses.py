"""guard-accesses: global-memory accesses of `T.Parallel` tile code never leave their buffer.

A kernel author writes a `T.Parallel` nest for a whole tile (`C[by * 64 + i, bx * 64 + j] = acc[i, j]`)
and the last tiles of a tensor whose size is not a multiple of the tile run past its edge. Inside a
`T.Parallel` nest, every load and store of a global buffer whose indices use a variable of the nest
(directly or through a name bound to an expression of one) is checked dim by dim: `0 <= index` and
`index < dim`. Each bound the analyzer proves from what the IR says (loop extents, the launch grid,
non-negative dims, the `if` conditions around the access, names bound to index expressions) is dropped,
so an access that provably stays inside costs nothing. What remains becomes a predicate: a load out of
bounds reads zero, a store (or a scalar atomic update) out of bounds is skipped.

`T.annotate_safe_value({A: v})` in a kernel makes its loads of `A` out of bounds read `v` instead (the
annotation is consumed here). A `T.copy` from `A` that may cross `A`'s edge becomes a `T.Parallel` nest
here, guarded the same way, since the backends' copies fill past an edge with zeros.

Bounds are only proven for index arithmetic, which is exact (docs/language.md, "Integer arithmetic");
an index computed from data always keeps its guard. Shared and local buffers are on-chip tiles the
kernel sizes itself and are not guarded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import Analyzer, Interval
from tilecraft.ir.arith.exact import ExactTable
from tilecraft.ir.buffer import Buffer, Range
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.structural import structural_equal
from tilecraft.ir.visitor import BufferKeepingMutator, free_vars, walk
from tilecraft.transform.tile_loops import (
    conjunction,
    copy_body,
    copy_extents,
    make_loop_vars,
    parallel_nest,
    whole_tile_conditions,
)

__all__ = ["guard_accesses", "guard_func"]

GUARDED_SCOPES = ("global",)


class _Guard(BufferKeepingMutator):
    def __init__(self, func: PrimFunc, target=None) -> None:
        super().__init__()
        self.target = target
        self.safe_values: dict[int, E.Expr] = {}  # T.annotate_safe_value of the current kernel, by buffer id
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
        saved, self.safe_values = self.safe_values, self._safe_values(s.body)
        try:
            return dataclasses.replace(s, body=self.mutate(s.body))
        finally:
            self.safe_values = saved

    def _safe_values(self, body: S.Stmt) -> dict[int, E.Expr]:
        """The kernel's T.annotate_safe_value entries; two different values for one buffer are an error."""
        found: dict[int, S.AnnotateSafeValue] = {}
        for note in (n for n in walk(body) if isinstance(n, S.AnnotateSafeValue)):
            first = found.setdefault(id(note.buffer), note)
            if not structural_equal(first.value, note.value):
                raise LoweringError(
                    f"{note.buffer.name} is given two safe values in one kernel: {first.value} (line "
                    f"{first.span.line if first.span else '?'}) and {note.value}",
                    note.span,
                    "annotate one value for each buffer per kernel",
                    target=self.target,
                )
        return {key: note.value for key, note in found.items()}

    def mutate_AnnotateSafeValue(self, s: S.AnnotateSafeValue) -> S.Stmt:
        return S.SeqStmt(())  # applied to the kernel's guarded loads

    def _past_edge(self, buf: Buffer, dtype) -> E.Expr:
        """What a load of `buf` out of bounds reads: the kernel's safe value for it, or zero."""
        value = self.safe_values.get(id(buf))
        return E.const(0, dtype) if value is None else E.cast(value, dtype)

    def mutate_Copy(self, s: S.Copy) -> S.Stmt:
        """A copy from a buffer with a safe value that may cross its edge: a T.Parallel nest, guarded here."""
        if id(s.src.buffer) not in self.safe_values or conjunction(whole_tile_conditions(s.src)) is None:
            return self.generic_mutate(s)
        if s.dst.buffer.scope in ("local", "local.var"):
            raise LoweringError(
                f"a T.copy from {s.src.buffer.name}, which has a safe value, into {s.dst.buffer.name}, a thread's "
                "own array: the safe value applies to tile copies (into shared tiles, fragments or tensors)",
                s.span,
                f"load {s.src.buffer.name}'s elements into the array with a T.serial loop and T.if_then_else",
                target=self.target,
            )
        loop_vars = make_loop_vars(len(copy_extents(s)))
        nest = parallel_nest(loop_vars, copy_extents(s), copy_body(s, loop_vars, predicated=False), s.span)
        return self.mutate(nest)

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
        return load if guard is None else E.select(guard, load, self._past_edge(e.buffer, e.dtype))

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


def guard_func(func: PrimFunc, target=None) -> PrimFunc:
    return func.with_body(_Guard(func, target).mutate(func.body))


@module_pass("guard-accesses")
def guard_accesses(mod: IRModule, ctx) -> IRModule:
    """Global loads and stores of T.Parallel tile code stay in bounds: unprovable ones are predicated
    (loads past the edge read the kernel's safe value for the buffer, or zero); no T.annotate_safe_value
    is left."""
    return mod.with_functions(guard_func(f, ctx.target) for f in mod.functions)
