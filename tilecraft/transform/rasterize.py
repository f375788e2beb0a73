"""`T.use_swizzle(panel_size, order)`: launch blocks in panels so that blocks running together share
tiles in L2.

Blocks are renumbered: the linear block id walks panels of `panel_size` rows (columns for
order="col") of the grid; within a panel it goes across the panel first, and every other panel runs
backwards so the last blocks of one panel and the first of the next touch the same tiles. In a kernel
of thread-block clusters the panels order whole clusters (the grid of clusters is renumbered, each
block keeps its offset in its cluster), so a cluster's blocks stay neighbours that share tiles.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, map_launches, substitute


class _FindSwizzle(Visitor):
    def __init__(self) -> None:
        self.hint: S.UseSwizzle | None = None

    def visit_UseSwizzle(self, s: S.UseSwizzle) -> None:
        self.hint = s


class _Drop(BufferKeepingMutator):
    def mutate_UseSwizzle(self, s: S.UseSwizzle) -> S.Stmt:
        return S.SeqStmt(())


def panel_order(bx: E.Expr, by: E.Expr, gx: E.Expr, gy: E.Expr, panel: int) -> tuple[E.Expr, E.Expr]:
    """(new bx, new by) for row panels of `panel` block rows."""
    bid = E.add(E.mul(by, gx), bx)
    group = E.mul(gx, panel)
    index, offset = E.floordiv(bid, group), E.floormod(bid, group)
    panels = E.floordiv(E.add(gy, panel - 1), panel)
    stride = E.select(
        E.compare(E.LT, E.add(index, 1), panels), E.cast(panel, gy.dtype), E.sub(gy, E.mul(index, panel))
    )
    col = E.floordiv(offset, stride)
    odd = E.compare(E.EQ, E.floormod(index, 2), 1)
    new_x = E.select(odd, E.sub(E.sub(gx, 1), col), col)
    new_y = E.add(E.floormod(offset, stride), E.mul(index, panel))
    return new_x, new_y


def _rasterize(launch: S.KernelLaunch) -> S.Stmt:
    find = _FindSwizzle()
    find.visit(launch.body)
    if find.hint is None:
        return launch
    body = _Drop().mutate(launch.body)
    if len(launch.grid) < 2:
        return dataclasses.replace(launch, body=body)
    (bx, by), (gx, gy) = launch.block_vars[:2], launch.grid[:2]
    cx, cy, _ = S.annotation(launch.annotations, S.CLUSTER_DIMS, (1, 1, 1))
    # a cluster moves as one: the panels order whole clusters, its blocks keep their offsets in it
    qx, qy = E.floordiv(bx, cx) if cx > 1 else bx, E.floordiv(by, cy) if cy > 1 else by
    nx, ny = E.floordiv(gx, cx) if cx > 1 else gx, E.floordiv(gy, cy) if cy > 1 else gy
    if find.hint.order == "col":
        new_y, new_x = panel_order(qy, qx, ny, nx, find.hint.panel_size)
    else:
        new_x, new_y = panel_order(qx, qy, nx, ny, find.hint.panel_size)
    if cx > 1:
        new_x = E.add(E.mul(new_x, cx), E.floormod(bx, cx))
    if cy > 1:
        new_y = E.add(E.mul(new_y, cy), E.floormod(by, cy))
    sx, sy = E.Var(dt.int32, f"{bx.name}_r"), E.Var(dt.int32, f"{by.name}_r")
    body = substitute(body, {bx: sx, by: sy})
    body = S.LetStmt(sx, E.cast(new_x, dt.int32), S.LetStmt(sy, E.cast(new_y, dt.int32), body))
    return dataclasses.replace(launch, body=body)


@module_pass("rasterize-blocks")
def rasterize_blocks(mod: IRModule, ctx) -> IRModule:
    """Kernels with T.use_swizzle renumber their blocks in L2-friendly panels."""
    return map_launches(mod, _rasterize)
