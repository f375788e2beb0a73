"""Statements lowering produces that more than one backend prints."""

from __future__ import annotations

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, node
from tilecraft.ir.stmt import Stmt


@node
class AtomicUpdate(Stmt):
    """An atomic read-modify-write of one element (`kind` is add, max or min)."""

    kind: str
    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr
