"""Atomics on CUDA: native atomicAdd/Max/Min where the hardware has them, compare-and-swap otherwise."""

from __future__ import annotations

from tilecraft.cpu.op.atomic import lower_atomic as element_loops
from tilecraft.cuda.layout import blocked_layout
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion


def lower_atomic(op: S.AtomicOp, ctx) -> S.Stmt:
    lowered = element_loops(op, ctx)
    if not isinstance(op.value, BufferRegion):
        if ctx.in_nest:
            return lowered
        # a statement outside T.Parallel runs on every thread; the update must happen once
        return S.IfThenElse(E.compare(E.EQ, ctx.tid, 0), lowered, span=op.span)
    if op.value.buffer.scope == "local.fragment":
        layout = ctx.layout(op.value.buffer, op.span)
    else:
        extents = tuple(E.const_value(e) for e in op.value.shape if E.const_value(e) != 1)
        layout = blocked_layout(extents, ctx.threads)
    return S.For(lowered.loop_var, lowered.min, lowered.extent, lowered.kind, lowered.body,
                 lowered.annotations + (("layout", layout),), span=op.span)  # fmt: skip
