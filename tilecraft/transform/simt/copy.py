"""T.copy and T.fill for SIMT targets, element by element.

A copy touching a fragment becomes a T.Parallel nest over the fragment with the fragment's layout
(each thread moves the elements it holds). Other copies and fills are split over the block's threads
with the default layout, with edge predicates on global operands. Backends with wider or
asynchronous copies try those first and fall back to these.
"""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.transform.tile_loops import (
    conjunction,
    copy_body,
    edge_conditions,
    fill_as_loops,
    loop_extents,
    make_loop_vars,
    packed_copy_nests,
    packed_fill_nests,
    pairs_packed,
    parallel_nest,
    region_index,
)

FRAGMENT = "local.fragment"


def with_layout(nest: S.For, layout) -> S.For:
    """`nest` annotated with the thread partition `lower-to-threads` gives it."""
    return S.For(nest.loop_var, nest.min, nest.extent, nest.kind, nest.body,
                 nest.annotations + (("layout", layout),), span=nest.span)  # fmt: skip


def fragment_side(op: S.Copy) -> BufferRegion | None:
    """The fragment whose layout partitions the copy: the destination when both are fragments, so that
    every thread holding a copy of an element (a replicated layout) writes it; reads of the source
    that another thread holds are broadcast by lower-to-threads."""
    for side in (op.dst, op.src):
        if side.buffer.scope == FRAGMENT:
            return side
    return None


def lower_copy(op: S.Copy, ctx) -> S.Stmt:
    frag = fragment_side(op)
    return fragment_copy(op, frag, ctx) if frag is not None else element_copy(op, ctx)


def fragment_copy(op: S.Copy, frag: BufferRegion, ctx) -> S.Stmt:
    """A nest over the whole fragment (its unit dims included), partitioned by the fragment's layout;
    a copy of part of the fragment is masked to that part."""
    layout = ctx.layout(frag.buffer, op.span)
    loop_vars = make_loop_vars(len(layout.shape))
    other = op.dst if frag is op.src else op.src
    # The other side is indexed by the offset into the fragment's region, along the region's non-unit dims.
    offsets = [v if E.const_value(r.min) == 0 else E.sub(v, r.min) for v, r in zip(loop_vars, frag.ranges)]
    kept = [o for o, r in zip(offsets, frag.ranges) if E.const_value(r.extent) != 1]
    other_dims = len(loop_extents(other))
    if not kept and other_dims:
        kept = offsets[-1:]  # a one-element fragment region against a region with a (unit) loop dim
    other_idx = region_index(other, kept) if other_dims == len(kept) else None
    if other_idx is None:
        ctx.fail(
            f"T.copy between fragment {frag.buffer.name} and {other.buffer.name}: extents differ", op.span
        )
    frag_idx = tuple(loop_vars)
    src_idx, dst_idx = (frag_idx, other_idx) if frag is op.src else (other_idx, frag_idx)
    value: E.Expr = E.cast(E.BufferLoad(op.src.dtype, op.src.buffer, src_idx), op.dst.dtype)
    load_guard = conjunction(edge_conditions(op.src, src_idx)) if frag is not op.src else None
    if load_guard is not None:
        value = E.select(load_guard, value, E.const(0, op.dst.dtype))
    body: S.Stmt = S.BufferStore(op.dst.buffer, value, dst_idx, span=op.span)
    store_guard = conjunction(edge_conditions(op.dst, dst_idx)) if frag is not op.dst else None
    inside = conjunction(
        _within(frag, loop_vars, layout.shape) + ([store_guard] if store_guard is not None else [])
    )
    if inside is not None:
        body = S.IfThenElse(inside, body, span=op.span)
    extents = [E.const(s) for s in layout.shape]
    return with_layout(parallel_nest(loop_vars, extents, body, op.span), layout)


def element_copy(op: S.Copy, ctx) -> S.Stmt:
    # A single element (every dim a unit) still needs a loop for the thread partition to iterate.
    extents = loop_extents(op.dst if op.dst.buffer.scope != "global" else op.src) or [E.const(1)]
    static = [E.const_value(e) for e in extents]
    if not all(isinstance(v, int) for v in static):
        ctx.fail("a T.copy between global buffers needs static extents on this target", op.span,
                 "give the copied region a compile-time shape (a tile), with edges clipped by the buffer")  # fmt: skip
    if pairs_packed(op.dst):
        return _blocked_pair(packed_copy_nests(op, extents), op, ctx)
    loop_vars = make_loop_vars(len(extents))
    body = copy_body(op, loop_vars, True)
    layout = ctx.blocked(tuple(static), op.dst.dtype)
    return with_layout(parallel_nest(loop_vars, extents, body, op.span), layout)


def _blocked_pair(nests: tuple[S.Stmt, S.Stmt, E.Expr], op: S.Copy | S.Fill, ctx) -> S.Stmt:
    """The whole-byte nest where its condition holds, else the general one, each split over the threads
    by bytes (tile_loops.packed_nests)."""
    fast, slow, aligned = nests
    fast, slow = (
        with_layout(nest, ctx.blocked(_static_extents(nest), op.dst.dtype)) for nest in (fast, slow)
    )
    return S.IfThenElse(aligned, fast, slow, span=op.span)


def _static_extents(nest: S.Stmt) -> tuple[int, ...]:
    extents = []
    while isinstance(nest, S.For) and nest.kind is S.ForKind.PARALLEL:
        extents.append(E.const_value(nest.extent))
        nest = nest.body
    return tuple(extents)


def lower_fill(op: S.Fill, ctx) -> S.Stmt:
    region = op.dst
    if region.buffer.scope == FRAGMENT:
        return fragment_fill(op, ctx)
    extents = loop_extents(region) or [E.const(1)]
    static = [E.const_value(e) for e in extents]
    if not all(isinstance(v, int) for v in static):
        ctx.fail("T.fill needs static extents on this target", op.span)
    if pairs_packed(region):
        return _blocked_pair(packed_fill_nests(op, extents), op, ctx)
    nest = fill_as_loops(op) if loop_extents(region) else _unit_fill(op)
    return with_layout(nest, ctx.blocked(tuple(static), region.dtype))


def fragment_fill(op: S.Fill, ctx) -> S.Stmt:
    """A nest over the whole fragment (unit dims included) with the fragment's layout; a fill of part
    of it is masked to that part."""
    region = op.dst
    layout = ctx.layout(region.buffer, op.span)
    loop_vars = make_loop_vars(len(layout.shape))
    value = E.cast(op.value, region.dtype)
    body: S.Stmt = S.BufferStore(region.buffer, value, tuple(loop_vars), span=op.span)
    inside = conjunction(_within(region, loop_vars, layout.shape))
    if inside is not None:
        body = S.IfThenElse(inside, body, span=op.span)
    extents = [E.const(s) for s in layout.shape]
    return with_layout(parallel_nest(loop_vars, extents, body, op.span), layout)


def _within(region: BufferRegion, loop_vars, shape) -> list[E.Expr]:
    """`min <= v < min + extent` for each dim the region does not cover whole."""
    conds = []
    for v, r, size in zip(loop_vars, region.ranges, shape):
        if E.const_value(r.min) == 0 and E.const_value(r.extent) == size:
            continue
        conds += [E.compare(E.GE, v, r.min), E.compare(E.LT, v, E.add(r.min, r.extent))]
    return conds


def _unit_fill(op: S.Fill) -> S.Stmt:
    """A fill of one element as a one-iteration nest (edges still guarded)."""
    (var,) = make_loop_vars(1)
    index = tuple(r.min for r in op.dst.ranges)
    store: S.Stmt = S.BufferStore(op.dst.buffer, E.cast(op.value, op.dst.dtype), index, span=op.span)
    guard = conjunction(edge_conditions(op.dst, index))
    if guard is not None:
        store = S.IfThenElse(guard, store, span=op.span)
    return parallel_nest([var], [E.const(1)], store, op.span)
