"""Atomics for SIMT targets: each element updated once, by the thread that holds it."""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.transform.tile_loops import atomic_as_loops


def lower_atomic(op: S.AtomicOp, ctx) -> S.Stmt:
    lowered = atomic_as_loops(op)
    if not isinstance(op.value, BufferRegion):
        if ctx.in_nest:
            return lowered
        # a statement outside T.Parallel runs on every thread; the update must happen once
        return S.IfThenElse(E.compare(E.EQ, ctx.tid, 0), lowered, span=op.span)
    if op.value.buffer.scope == "local.fragment":
        layout = ctx.layout(op.value.buffer, op.span)
    else:
        extents = tuple(E.const_value(e) for e in op.value.shape if E.const_value(e) != 1)
        layout = ctx.blocked(extents)
    return S.For(lowered.loop_var, lowered.min, lowered.extent, lowered.kind, lowered.body,
                 lowered.annotations + (("layout", layout),), span=op.span)  # fmt: skip
