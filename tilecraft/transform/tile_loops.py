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
    if pairs_packed(copy.dst):
        fast, slow, aligned = packed_copy_nests(copy, extents, prefix)
        return S.IfThenElse(aligned, fast, slow, span=copy.span)
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
    if pairs_packed(fill.dst):
        fast, slow, aligned = packed_fill_nests(fill, extents, prefix)
        return S.IfThenElse(aligned, fast, slow, span=fill.span)
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


# ---------------------------------------------------------------- packed (4-bit) global destinations
#
# Global memory holds 4-bit types two to a byte (element i in the low nibble of byte i // 2 for even i,
# the high one for odd i); rows of a packed tensor start on whole bytes, so an element's nibble is the
# parity of its column. A copy or fill into such memory iterates the bytes of each row it touches: a
# byte whose two elements both lie in the region (and inside the tensor) is written whole, by one
# iteration, so no two threads or blocks share it; a byte the region covers only half of (an odd start
# or end, the odd last column of a tensor) gets its nibble set by an atomic store, since the other half
# may be another block's. Where the region starts on an even column, spans an even number of them and
# lies inside the tensor, the nest has only whole bytes and no predicates.


def pairs_packed(region: BufferRegion) -> bool:
    """Stores into `region` can be whole bytes: packed global memory whose last dim the region spans."""
    buf = region.buffer
    return buf.scope == "global" and buf.dtype.is_packed and E.const_value(region.ranges[-1].extent) != 1


def packed_nests(dst: BufferRegion, extents: Sequence[Expr], value_at, prefix: str, span=None,
                 edges: Sequence[Expr] = ()) -> tuple[S.Stmt, S.Stmt, Expr]:  # fmt: skip
    """(whole-byte nest, general nest, the condition for the first) of stores into packed `dst`, whose
    last dim is the last of `extents`. `value_at(outer, column, guarded)` is the value for the element at
    `column` of the region's last dim (relative to its start) in the row the outer loop vars pick;
    `edges` are further whole-tile conditions (a source's)."""
    width = extents[-1]
    start = dst.ranges[-1].min
    conds = whole_tile_conditions(dst) + list(edges)
    conds.append(E.compare(E.EQ, E.floormod(start, 2), E.const(0, start.dtype)))
    if not isinstance(E.const_value(width), int):
        conds.append(E.compare(E.EQ, E.floormod(width, 2), E.const(0, width.dtype)))
    elif E.const_value(width) % 2:
        conds.append(E.const(False))
    fast_vars = make_loop_vars(len(extents), prefix)
    fast = parallel_nest(fast_vars, [*extents[:-1], _halved(width)],
                         _whole_bytes(dst, fast_vars, value_at, span), span)  # fmt: skip
    slow_vars = make_loop_vars(len(extents), prefix)
    slow = parallel_nest(slow_vars, [*extents[:-1], _bytes_touched(width)],
                         _byte_stores(dst, slow_vars, width, value_at, span), span)  # fmt: skip
    return fast, slow, conjunction(conds)


def _halved(width: Expr) -> Expr:
    value = E.const_value(width)
    return E.const(value // 2, width.dtype) if isinstance(value, int) else E.floordiv(width, 2)


def _bytes_touched(width: Expr) -> Expr:
    """The bytes a row of `width` elements may touch from either parity of its start."""
    value = E.const_value(width)
    return E.const(value // 2 + 1, width.dtype) if isinstance(value, int) else E.add(E.floordiv(width, 2), 1)


def _pair(dtype, low: Expr, high: Expr) -> Expr:
    return E.Call(dtype.with_lanes(2), "vector", (low, high))


def _whole_bytes(dst: BufferRegion, loop_vars: Sequence[Var], value_at, span) -> S.Stmt:
    """Byte q of the row: columns 2q and 2q + 1, both inside (the fast nest's condition holds)."""
    outer, q = list(loop_vars[:-1]), loop_vars[-1]
    low = E.mul(q, 2)
    index = region_index(dst, [*outer, low])
    value = _pair(dst.dtype, value_at(outer, low, False), value_at(outer, E.add(low, 1), False))
    return S.BufferStore(dst.buffer, value, index, span=span)


def _byte_stores(dst: BufferRegion, loop_vars: Sequence[Var], width: Expr, value_at, span) -> S.Stmt:
    """Byte q of those the row touches: whole where both of its columns are stored, else its one nibble."""
    outer, q = list(loop_vars[:-1]), loop_vars[-1]
    start = dst.ranges[-1].min
    low = E.sub(E.mul(q, 2), E.cast(E.floormod(start, 2), q.dtype))  # relative column of the low nibble
    high = E.add(low, 1)
    low_index, high_index = region_index(dst, [*outer, low]), region_index(dst, [*outer, high])
    row_edges = _row_edges(dst, low_index)
    low_in = conjunction([E.compare(E.GE, low, E.const(0, low.dtype)), E.compare(E.LT, low, width),
                          *_column_edge(dst, low_index)])  # fmt: skip
    high_in = conjunction([E.compare(E.LT, high, width), *_column_edge(dst, high_index)])
    both = S.BufferStore(dst.buffer, _pair(dst.dtype, value_at(outer, low, True), value_at(outer, high, True)),
                         low_index, span=span)  # fmt: skip
    low_only = S.BufferStore(dst.buffer, value_at(outer, low, True), low_index, span=span)
    high_only = S.BufferStore(dst.buffer, value_at(outer, high, True), high_index, span=span)
    body: S.Stmt = S.IfThenElse(
        E.logical_and(low_in, high_in),
        both,
        S.IfThenElse(low_in, low_only, S.IfThenElse(high_in, high_only, span=span), span=span),
        span=span,
    )
    rows = conjunction(row_edges)
    return body if rows is None else S.IfThenElse(rows, body, span=span)


def _row_edges(region: BufferRegion, indices: Sequence[Expr]) -> list[Expr]:
    """`edge_conditions` of every dim but the last."""
    if region.buffer.scope not in PREDICATED_SCOPES:
        return []
    dims = zip(region.ranges[:-1], indices[:-1], region.buffer.shape[:-1])
    return [E.compare(E.LT, index, dim) for r, index, dim in dims if not _statically_inside(r, dim)]


def _last_dim_guarded(region: BufferRegion) -> bool:
    return region.buffer.scope in PREDICATED_SCOPES and not _statically_inside(
        region.ranges[-1], region.buffer.shape[-1]
    )


def _column_edge(region: BufferRegion, indices: Sequence[Expr]) -> list[Expr]:
    """`column < the tensor's last dim` where the region may run past it."""
    if not _last_dim_guarded(region):
        return []
    return [E.compare(E.LT, indices[-1], region.buffer.shape[-1])]


def packed_copy_nests(
    copy: S.Copy, extents: Sequence[Expr], prefix: str = "i"
) -> tuple[S.Stmt, S.Stmt, Expr]:
    """`packed_nests` for a copy into packed memory (loads past a source's edge read zero)."""

    def value_at(outer: list[Expr], column: Expr, guarded: bool) -> Expr:
        index = region_index(copy.src, [*outer, column])
        value: Expr = E.cast(E.BufferLoad(copy.src.dtype, copy.src.buffer, index), copy.dst.dtype)
        guard = conjunction(edge_conditions(copy.src, index)) if guarded else None
        return value if guard is None else E.select(guard, value, E.const(0, copy.dst.dtype))

    return packed_nests(copy.dst, extents, value_at, prefix, copy.span, whole_tile_conditions(copy.src))


def packed_fill_nests(
    fill: S.Fill, extents: Sequence[Expr], prefix: str = "i"
) -> tuple[S.Stmt, S.Stmt, Expr]:
    """`packed_nests` for a fill of packed memory."""
    value = E.cast(fill.value, fill.dst.dtype)
    return packed_nests(fill.dst, extents, lambda outer, column, guarded: value, prefix, fill.span)
