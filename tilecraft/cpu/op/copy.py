"""Copy and fill: element loops with edge predicates (the shared form); conversion happens per element."""

from __future__ import annotations

from tilecraft.ir import stmt as S
from tilecraft.transform.tile_loops import copy_as_loops, fill_as_loops


def lower_copy(op: S.Copy, ctx) -> S.Stmt:
    return copy_as_loops(op)


def lower_fill(op: S.Fill, ctx) -> S.Stmt:
    return fill_as_loops(op)
