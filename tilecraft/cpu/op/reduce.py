"""Reductions and cumsum on the CPU: the shared serial loops (a block is one thread)."""

from __future__ import annotations

from tilecraft.ir import stmt as S
from tilecraft.transform.reductions import cumsum_loops, reduce_loops


def lower_reduce(op: S.Reduce, ctx) -> S.Stmt:
    return reduce_loops(op)


def lower_cumsum(op: S.Cumsum, ctx) -> S.Stmt:
    return cumsum_loops(op)


def lower_finalize_reducer(op: S.FinalizeReducer, ctx) -> S.Stmt:
    """Nothing to combine: the block's one thread made every update to the one copy of each element."""
    return S.SeqStmt(())
