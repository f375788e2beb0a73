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
from tilecraft.layout.tile import blocked_layout
from tilecraft.transform.tile_loops import (
    conjunction,
    copy_body,
    edge_conditions,
    fill_as_loops,
    loop_extents,
    make_loop_vars,
    parallel_nest,
    region_index,
)

FRAGMENT = "local.fragment"


def with_layout(nest: S.For, layout) -> S.For:
    """`nest` annotated with the thread partition `lower-to-threads` gives it."""
    return S.For(nest.loop_var, nest.min, nest.extent, nest.kind, nest.body,
                 nest.annotations + (("layout", layout),), span=nest.span)  # fmt: skip


def fragment_side(op: S.Copy) -> BufferRegion | None:
    for side in (op.src, op.dst):
        if side.buffer.scope == FRAGMENT:
            return side
    return None


def lower_copy(op: S.Copy, ctx) -> S.Stmt:
    frag = fragment_side(op)
    return fragment_copy(op, frag, ctx) if frag is not None else element_copy(op, ctx)


def fragment_copy(op: S.Copy, frag: BufferRegion, ctx) -> S.Stmt:
    """A nest over the whole fragment (its unit dims included), partitioned by the fragment's layout."""
    layout = ctx.layout(frag.buffer, op.span)
    whole = [
        E.const_value(r.min) == 0 and E.const_value(r.extent) == s for r, s in zip(frag.ranges, layout.shape)
    ]
    if not all(whole):
        ctx.fail(f"T.copy of a part of fragment {frag.buffer.name} is not supported on this target", op.span,
                 "copy the whole fragment, or use a shared buffer for partial tiles")  # fmt: skip
    loop_vars = make_loop_vars(len(layout.shape))
    other = op.dst if frag is op.src else op.src
    kept = [v for v, s in zip(loop_vars, layout.shape) if s != 1] or loop_vars[-1:]
    other_idx = region_index(other, kept) if len(loop_extents(other)) == len(kept) else None
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
    if store_guard is not None:
        body = S.IfThenElse(store_guard, body, span=op.span)
    extents = [E.const(s) for s in layout.shape]
    return with_layout(parallel_nest(loop_vars, extents, body, op.span), layout)


def element_copy(op: S.Copy, ctx) -> S.Stmt:
    extents = loop_extents(op.dst if op.dst.buffer.scope != "global" else op.src)
    static = [E.const_value(e) for e in extents]
    if not all(isinstance(v, int) for v in static):
        ctx.fail("a T.copy between global buffers needs static extents on this target", op.span,
                 "give the copied region a compile-time shape (a tile), with edges clipped by the buffer")  # fmt: skip
    loop_vars = make_loop_vars(len(extents))
    body = copy_body(op, loop_vars, True)
    layout = blocked_layout(tuple(static), ctx.threads, op.dst.dtype)
    return with_layout(parallel_nest(loop_vars, extents, body, op.span), layout)


def lower_fill(op: S.Fill, ctx) -> S.Stmt:
    region = op.dst
    nest = fill_as_loops(op)
    if region.buffer.scope == FRAGMENT:
        return with_layout(nest, ctx.layout(region.buffer, op.span))
    static = [E.const_value(e) for e in loop_extents(region)]
    if not all(isinstance(v, int) for v in static):
        ctx.fail("T.fill needs static extents on this target", op.span)
    return with_layout(nest, blocked_layout(tuple(static), ctx.threads, region.dtype))
