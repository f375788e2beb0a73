"""Copy and fill: element loops with edge predicates (the shared form); conversion happens per element.

A copy into a tile stored as column panels (`PanelCopy`, chosen by the `gemm-b-panels` pass) walks the
tile's rows, and within a row each panel's columns as one vectorizable loop, so its stores are
contiguous runs of a cache line.
"""

from __future__ import annotations

from tilecraft.cpu.ir import PanelCopy
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.expr import Var
from tilecraft.transform.tile_loops import (
    conjunction,
    copy_as_loops,
    edge_conditions,
    fill_as_loops,
    region_index,
    whole_tile_conditions,
)


def lower_copy(op: S.Copy, ctx) -> S.Stmt:
    return copy_as_loops(op)


def lower_fill(op: S.Fill, ctx) -> S.Stmt:
    return fill_as_loops(op)


def lower_panel_copy(op: PanelCopy, ctx) -> S.Stmt:
    """Rows, then panels, then a panel's columns (T.Parallel); a tile that may cross the tensor's edge
    gets a predicated nest (loads past it read zero) beside the predicate-free one."""
    fast = _panel_nest(op, predicated=False)
    whole = conjunction(whole_tile_conditions(op.src))
    if whole is None:
        return fast
    return S.IfThenElse(whole, fast, _panel_nest(op, predicated=True), span=op.span)


def _panel_nest(op: PanelCopy, predicated: bool) -> S.Stmt:
    panels, rows, width = (E.const_value(d) for d in op.dst.shape)
    row, panel, col = Var(dt.int32, "pr"), Var(dt.int32, "pp"), Var(dt.int32, "pc")
    src_idx = region_index(op.src, [row, E.add(E.mul(panel, width), col)])
    value: E.Expr = E.cast(E.BufferLoad(op.src.dtype, op.src.buffer, src_idx), op.dst.dtype)
    guard = conjunction(edge_conditions(op.src, src_idx)) if predicated else None
    if guard is not None:
        value = E.select(guard, value, E.const(0, op.dst.dtype))
    body: S.Stmt = S.BufferStore(op.dst, value, (panel, row, col), span=op.span)
    body = S.For(col, E.const(0), E.const(width), S.ForKind.PARALLEL, body)
    body = S.For(panel, E.const(0), E.const(panels), S.ForKind.SERIAL, body)
    return S.For(row, E.const(0), E.const(rows), S.ForKind.SERIAL, body, span=op.span)
