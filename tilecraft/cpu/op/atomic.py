"""Atomics on the CPU: real atomic read-modify-writes, since blocks run in parallel."""

from __future__ import annotations

from tilecraft.ir import stmt as S
from tilecraft.transform.tile_loops import atomic_as_loops


def lower_atomic(op: S.AtomicOp, ctx) -> S.Stmt:
    return atomic_as_loops(op)
