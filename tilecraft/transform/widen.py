"""widen-index-arithmetic: index arithmetic is computed in a type that holds every value it takes.

Index arithmetic is exact in the language (`tilecraft/ir/arith/exact.py`), but written in the dtype
of its operands: `bx * 1024 + i` is int32 even when the tensor it indexes has 2**31 + 8 elements. This
pass bounds every index expression from the ranges of its variables (loop extents, the launch grid and
block, dims, scalar parameters) and rewrites each operation whose exact value may leave its dtype to
int64, casting its operands up. Loop and let variables whose ranges do not fit their dtype become
int64. Everything that provably fits keeps its 32-bit arithmetic, so small kernels pay nothing.

Data arithmetic (anything that reads a buffer) is left as written: it wraps around at its width.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import Interval, bound, dtype_interval
from tilecraft.ir.arith.exact import INDEX_CALLS, ExactTable
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import BufferKeepingMutator, substitute

__all__ = ["widen_func", "widen_index_arithmetic"]

_INT64 = dtype_interval(dt.int64)
# Nodes whose value is the exact result of its operands: widened when that result does not fit.
_ARITHMETIC = (E.Add, E.Sub, E.Mul, E.Div, E.FloorDiv, E.FloorMod, E.TruncMod, E.Min, E.Max)
# Where an expression may come back wider than it was written.
_WIDE_FIELDS = {"indices"}


# Buffers are kept: their shapes and strides are addressed in 64 bits by the printers already.
class _Widener(BufferKeepingMutator):
    def __init__(self, func: PrimFunc) -> None:
        super().__init__()
        self.exact = ExactTable()
        self.ranges: dict[E.Var, Interval] = {}
        self.bounds: dict[E.Expr, Interval] = {}
        for dim in func.symbolic_dims:
            self.ranges[dim] = Interval(0, None).intersect(dtype_interval(dim.dtype))

    # ------------------------------------------------------------------ ranges

    def bound(self, e: E.Expr) -> Interval:
        return bound(e, self.ranges, self.bounds, self.exact)

    @contextmanager
    def binding(self, var: E.Var, interval: Interval) -> Iterator[None]:
        old = self.ranges.get(var)
        self.ranges[var] = interval
        self.bounds.clear()
        try:
            yield
        finally:
            if old is None:
                self.ranges.pop(var, None)
            else:
                self.ranges[var] = old
            self.bounds.clear()

    # ------------------------------------------------------------------ expressions

    def mutate(self, node):
        if isinstance(node, E.Expr):
            return self.expr(node)
        return super().mutate(node)

    def expr(self, e: E.Expr) -> E.Expr:
        """`e` with its index arithmetic exact; an index expression may come back as int64."""
        if self.exact.is_index(e):
            return self.widen(e)
        return self.rebuild(e)

    def rebuild(self, e: E.Expr) -> E.Expr:
        """A data expression: its children keep their dtypes (indices of loads may widen)."""
        changes = {}
        for f in dataclasses.fields(e):
            old = getattr(e, f.name)
            if f.name == "span" or not isinstance(old, (E.Expr, tuple)):
                continue
            new = self.field(old, keep_wide=f.name in _WIDE_FIELDS)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(e, **changes) if changes else e

    def field(self, old, keep_wide: bool):
        if isinstance(old, tuple):
            items = tuple(self.field(x, keep_wide) if isinstance(x, E.Expr) else x for x in old)
            return old if all(a is b for a, b in zip(items, old)) else items
        new = self.expr(old)
        return new if keep_wide or new.dtype == old.dtype else E.Cast(old.dtype, new)

    def widen(self, e: E.Expr) -> E.Expr:
        if isinstance(e, (E.Var, E.IntImm)) or e.dtype.lanes != 1:
            return e
        if isinstance(e, _ARITHMETIC) or (isinstance(e, E.Call) and e.op in INDEX_CALLS):
            return self._widen_arithmetic(e)
        if isinstance(e, E.CmpOp):
            a, b = _matched(self.widen(e.a), self.widen(e.b))
            return e if a is e.a and b is e.b else type(e)(e.dtype, a, b)
        if isinstance(e, E.Select):
            cond = self.widen(e.condition)
            t, f = _matched(self.widen(e.true_value), self.widen(e.false_value))
            if cond is e.condition and t is e.true_value and f is e.false_value:
                return e
            return E.Select(t.dtype, cond, t, f)
        if isinstance(e, E.Cast):
            return self._widen_cast(e)
        return self.rebuild(e)  # And, Or, Not: their operands are conditions

    def _widen_arithmetic(self, e: E.Expr) -> E.Expr:
        operands = (e.a, e.b) if isinstance(e, E.BinaryOp) else e.args
        new = tuple(self.widen(x) for x in operands)
        wide = any(x.dtype != o.dtype for x, o in zip(new, operands))
        if not wide and not self.bound(e).is_subset(dtype_interval(e.dtype)) and _fits_int64(self.bound(e)):
            wide = True
        if not wide:
            return e if all(x is o for x, o in zip(new, operands)) else _rebuilt(e, new, e.dtype)
        return _rebuilt(e, tuple(_to_int64(x) for x in new), dt.int64)

    def _widen_cast(self, e: E.Cast) -> E.Expr:
        value = self.widen(e.value)
        if value is e.value:
            return e
        # A cast to a narrower type than the widened value truncates, as the kernel wrote it.
        return value if value.dtype == e.dtype else E.Cast(e.dtype, value)

    # ------------------------------------------------------------------ statements

    def mutate_For(self, s: S.For) -> S.Stmt:
        lo, extent = self.expr(s.min), self.expr(s.extent)
        first, count = self.bound(lo), self.bound(extent)
        last = None if first.hi is None or count.hi is None else first.hi + count.hi - 1
        interval = Interval(first.lo, last)
        var, body = self._retyped(s.loop_var, interval, s.body)
        lo, extent = _cast_to(lo, var.dtype), _cast_to(extent, var.dtype)
        with self.binding(var, interval):
            body = self.mutate(body)
        return S.For(var, lo, extent, s.kind, body, s.annotations, span=s.span)

    def mutate_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        value = self.expr(s.value)
        if not self.exact.is_index(s.value):
            if s.var.dtype.is_integer:
                self.exact.data_vars.add(s.var)
            value = value if value.dtype == s.var.dtype else E.Cast(s.var.dtype, value)
            return S.LetStmt(s.var, value, self.mutate(s.body), span=s.span)
        interval = self.bound(value)
        var, body = self._retyped(s.var, interval, s.body)
        value = _cast_to(value, var.dtype)
        with self.binding(var, interval):
            body = self.mutate(body)
        return S.LetStmt(var, value, body, span=s.span)

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        """Stores and atomic updates: indices may widen, the stored value keeps the buffer's dtype."""
        indices = self.field(s.indices, keep_wide=True)
        value = self.field(s.value, keep_wide=False)
        if indices is s.indices and value is s.value:
            return s
        return dataclasses.replace(s, indices=indices, value=value)

    mutate_AtomicUpdate = mutate_BufferStore

    def mutate_KernelLaunch(self, s: S.KernelLaunch) -> S.Stmt:
        grid = tuple(_cast_to(self.expr(g), g.dtype) for g in s.grid)
        scopes = [(v, Interval(0, _last(self.bound(g)))) for v, g in zip(s.block_vars, grid)]
        scopes += [(v, Interval(0, t - 1)) for v, t in zip(s.thread_vars, s.threads)]
        body = s.body
        for var, interval in scopes:
            self.ranges[var] = interval
        self.bounds.clear()
        body = self.mutate(body)
        for var, _ in scopes:
            self.ranges.pop(var, None)
        self.bounds.clear()
        return dataclasses.replace(s, grid=grid, body=body)

    def _retyped(self, var: E.Var, interval: Interval, body: S.Stmt) -> tuple[E.Var, S.Stmt]:
        """`var`, or an int64 twin of it when its values do not fit its dtype (the body follows)."""
        if not var.dtype.is_integer or interval.is_subset(dtype_interval(var.dtype)):
            return var, body
        if not _fits_int64(interval):
            return var, body
        wide = E.Var(dt.int64, var.name, span=var.span)
        return wide, substitute(body, {var: wide})


def _last(extent: Interval) -> int | None:
    return None if extent.hi is None else max(extent.hi - 1, 0)


def _fits_int64(interval: Interval) -> bool:
    return interval.is_subset(_INT64)


def _to_int64(e: E.Expr) -> E.Expr:
    return e if e.dtype == dt.int64 else E.cast(e, dt.int64)


def _cast_to(e: E.Expr, dtype: dt.DataType) -> E.Expr:
    return e if e.dtype == dtype else E.cast(e, dtype)


def _matched(a: E.Expr, b: E.Expr) -> tuple[E.Expr, E.Expr]:
    if a.dtype == b.dtype:
        return a, b
    return _to_int64(a), _to_int64(b)


def _rebuilt(e: E.Expr, operands: tuple[E.Expr, ...], dtype: dt.DataType) -> E.Expr:
    if isinstance(e, E.BinaryOp):
        return type(e)(dtype, operands[0], operands[1])
    return E.Call(dtype, e.op, operands)


def widen_func(func: PrimFunc) -> PrimFunc:
    return func.with_body(_Widener(func).mutate(func.body))


@module_pass("widen-index-arithmetic")
def widen_index_arithmetic(mod: IRModule, ctx) -> IRModule:
    """Every index expression is computed in a type that holds all its values (int64 where needed)."""
    return mod.with_functions(widen_func(f) for f in mod.functions)
