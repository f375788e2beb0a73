"""Atomics: real atomic read-modify-writes, since blocks run in parallel on the CPU."""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.transform.tile_loops import (
    conjunction,
    edge_conditions,
    loop_extents,
    make_loop_vars,
    parallel_nest,
    region_index,
)


def lower_atomic(op: S.AtomicOp, ctx) -> S.Stmt:
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
