"""Element loops for copy and fill: the form every backend starts from.

`copy_as_loops` turns a Copy into a `T.Parallel` nest over the copied extents with edge predicates on
global operands (loads past the edge read zero, stores past it are skipped). When the region may cross
an edge, the nest is emitted twice behind a whole-tile test, so the common interior case has no
per-element predicate and stays vectorizable.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.ir.expr import Expr, Var

PREDICATED_SCOPES = ("global",)


def loop_extents(region: BufferRegion) -> list[Expr]:
    """The extents of the region's non-unit dims, in order (a unit dim is indexed by its min)."""
    return [r.extent for r in region.ranges if E.const_value(r.extent) != 1]


def region_index(region: BufferRegion, loop_vars: Sequence[Var]) -> tuple[Expr, ...]:
    """Element indices of `region` where its non-unit dims take `loop_vars` in order."""
    out, k = [], 0
    for r in region.ranges:
        if E.const_value(r.extent) == 1:
            out.append(r.min)
        else:
            out.append(E.add(r.min, loop_vars[k]) if E.const_value(r.min) != 0 else _as(loop_vars[k], r.min))
            k += 1
    return tuple(out)


def _as(var: Var, like: Expr) -> Expr:
    return E.cast(var, like.dtype)


def make_loop_vars(n: int, prefix: str = "i") -> list[Var]:
    return [Var(dt.int32, f"{prefix}{k}") for k in range(n)]


def edge_conditions(region: BufferRegion, indices: Sequence[Expr]) -> list[Expr]:
    """`index < dim` for each dim of a global region whose tile may run past the edge."""
    if region.buffer.scope not in PREDICATED_SCOPES:
        return []
    conds = []
    for r, index, dim in zip(region.ranges, indices, region.buffer.shape):
        if _statically_inside(r, dim):
            continue
        conds.append(E.compare(E.LT, index, dim))
    return conds


def whole_region(region: BufferRegion) -> bool:
    """The region is all of its buffer: each range starts at 0 and spans its dim (equal constants, or
    both not constant)."""
    return all(
        E.const_value(r.min) == 0 and E.const_value(r.extent) == E.const_value(d)
        for r, d in zip(region.ranges, region.buffer.shape)
    )


def whole_tile_conditions(region: BufferRegion) -> list[Expr]:
    """`min + extent <= dim` for each dim of a global region that may cross the edge."""
    if region.buffer.scope not in PREDICATED_SCOPES:
        return []
    return [
        E.compare(E.LE, E.add(r.min, r.extent), dim)
        for r, dim in zip(region.ranges, region.buffer.shape)
        if not _statically_inside(r, dim)
    ]


def _statically_inside(r, dim) -> bool:
    lo, ext, n = E.const_value(r.min), E.const_value(r.extent), E.const_value(dim)
    if all(isinstance(v, int) for v in (lo, ext, n)):
        return lo + ext <= n
    from tilecraft.ir.arith import can_prove

    return can_prove(E.compare(E.LE, E.add(r.min, r.extent), dim))


def conjunction(conds: Sequence[Expr]) -> Expr | None:
    result = None
    for c in conds:
        result = c if result is None else E.logical_and(result, c)
    return result


def parallel_nest(loop_vars: Sequence[Var], extents: Sequence[Expr], body: S.Stmt, span=None) -> S.Stmt:
    for var, extent in reversed(list(zip(loop_vars, extents))):
        body = S.For(var, E.const(0, var.dtype), _as_int32(extent), S.ForKind.PARALLEL, body, span=span)
    return body


def _as_int32(e: Expr) -> Expr:
    return e if e.dtype == dt.int32 else E.cast(e, dt.int32)


def copy_body(copy: S.Copy, loop_vars: Sequence[Var], predicated: bool) -> S.Stmt:
    src_idx = region_index(copy.src, loop_vars)
    dst_idx = region_index(copy.dst, loop_vars)
    value: Expr = E.cast(E.BufferLoad(copy.src.dtype, copy.src.buffer, src_idx), copy.dst.dtype)
    if predicated:
        load_guard = conjunction(edge_conditions(copy.src, src_idx))
        if load_guard is not None:
            value = E.select(load_guard, value, E.const(0, copy.dst.dtype))
    store: S.Stmt = S.BufferStore(copy.dst.buffer, value, dst_idx, span=copy.span)
    if predicated:
        store_guard = conjunction(edge_conditions(copy.dst, dst_idx))
        if store_guard is not None:
            store = S.IfThenElse(store_guard, store, span=copy.span)
    return store


def copy_extents(copy: S.Copy) -> list[Expr]:
    """Iterate the on-chip side's extents when there is one: they are static."""
    if copy.dst.buffer.scope not in PREDICATED_SCOPES:
        return loop_extents(copy.dst)
    return loop_extents(copy.src)


def copy_as_loops(copy: S.Copy, prefix: str = "i") -> S.Stmt:
    """The copy as a T.Parallel nest, with a predicate-free fast path for interior tiles."""
    extents = copy_extents(copy)
    loop_vars = make_loop_vars(len(extents), prefix)
    whole = conjunction(whole_tile_conditions(copy.src) + whole_tile_conditions(copy.dst))
    fast = parallel_nest(loop_vars, extents, copy_body(copy, loop_vars, predicated=False), copy.span)
    if whole is None:
        return fast
    slow_vars = make_loop_vars(len(extents), prefix)
    slow = parallel_nest(slow_vars, extents, copy_body(copy, slow_vars, predicated=True), copy.span)
    return S.IfThenElse(whole, fast, slow, span=copy.span)


def fill_as_loops(fill: S.Fill, prefix: str = "i") -> S.Stmt:
    """The fill as a T.Parallel nest (stores past a global edge are skipped)."""
    extents = loop_extents(fill.dst)
    loop_vars = make_loop_vars(len(extents), prefix)
    index = region_index(fill.dst, loop_vars)
    store: S.Stmt = S.BufferStore(fill.dst.buffer, E.cast(fill.value, fill.dst.dtype), index, span=fill.span)
    guard = conjunction(edge_conditions(fill.dst, index))
    if guard is not None:
        store = S.IfThenElse(guard, store, span=fill.span)
    return parallel_nest(loop_vars, extents, store, fill.span)


def atomic_as_loops(op: S.AtomicOp) -> S.Stmt:
    """One AtomicUpdate for a scalar value; a T.Parallel nest of them for a region (edges skipped)."""
    from tilecraft.ir.lowered import AtomicUpdate

    if not isinstance(op.value, BufferRegion):
        index = tuple(r.min for r in op.dst.ranges)
        return AtomicUpdate(op.kind, op.dst.buffer, index, E.cast(op.value, op.dst.dtype), span=op.span)
    extents = loop_extents(op.value)
    loop_vars = make_loop_vars(len(extents), "a")
    dst_index = region_index(op.dst, loop_vars)
    src_index = region_index(op.value, loop_vars)
    value = E.cast(E.BufferLoad(op.value.dtype, op.value.buffer, src_index), op.dst.dtype)
    body: S.Stmt = AtomicUpdate(op.kind, op.dst.buffer, dst_index, value, span=op.span)
    guard = conjunction(edge_conditions(op.dst, dst_index))
    if guard is not None:
        body = S.IfThenElse(guard, body, span=op.span)
    return parallel_nest(loop_vars, extents, body, op.span)
