"""Host-side statements that lowering produces once kernels are split from the host function."""

from __future__ import annotations

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, node
from tilecraft.ir.stmt import Stmt


@node
class KernelCall(Stmt):
    """Launch device kernel `symbol` over `grid` blocks of `threads`, passing `args` in its ABI order."""

    symbol: str
    args: tuple[Buffer | Expr, ...]
    grid: tuple[Expr, ...]
    threads: tuple[int, ...]
    dynamic_smem: int = 0
