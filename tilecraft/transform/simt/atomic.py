"""Atomics for SIMT targets: each element updated once, by the thread that holds it; a scalar atomic of
per-thread code (transform/uniformity.py), by every thread that runs it."""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.transform.tile_loops import atomic_as_loops


def lower_atomic(op: S.AtomicOp, ctx) -> S.Stmt:
    lowered = atomic_as_loops(op)
    if not isinstance(op.value, BufferRegion):
        if ctx.in_nest or (ctx.varying is not None and ctx.varying.stmt(op)):
            # per-thread code (an operand or the control around it differs between threads): each
            # thread makes its own update, as TileLang's per-thread atomics do
            return lowered
        # a statement outside T.Parallel runs on every thread; a uniform update must happen once
        return S.IfThenElse(E.compare(E.EQ, ctx.tid, 0), lowered, span=op.span)
    if op.value.buffer.scope == "local.fragment":
        layout = ctx.layout(op.value.buffer, op.span)
    else:
        extents = tuple(E.const_value(e) for e in op.value.shape if E.const_value(e) != 1)
        layout = ctx.blocked(extents)
    return S.For(lowered.loop_var, lowered.min, lowered.extent, lowered.kind, lowered.body,
                 lowered.annotations + (("layout", layout),), span=op.span)  # fmt: skip
