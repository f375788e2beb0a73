"""Multi-dimensional thread blocks as one linear thread index.

`T.Kernel(..., threads=(BLOCK_N, BLOCK_K))` launches BLOCK_N * BLOCK_K threads per block, and
`T.get_thread_binding(d)` reads the index along dim d. Every tile-level pass (layouts, thread groups,
cross-thread reductions) describes threads by one index, so a launch with several thread dims becomes a
launch of their product, the dims recovered from the linear index with dim 0 fastest: thread (x, y, z)
is linear thread `x + X * (y + Y * z)`. That is how GPUs linearize the threads of a block, so warps
hold the same threads as a launch with a real second block dim would, and a reduction over dim 1 is one
over fixed bits of the linear index when the dims are powers of two.
"""

from __future__ import annotations

import dataclasses
import math

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import map_launches, substitute


def thread_dim_indices(flat: E.Expr, extents: tuple[int, ...]) -> list[E.Expr]:
    """The index along each dim of a block of `extents` threads, from its linear index (dim 0 fastest)."""
    out: list[E.Expr] = []
    stride = 1
    for k, extent in enumerate(extents):
        index = flat if stride == 1 else E.floordiv(flat, stride)
        if k < len(extents) - 1:
            index = E.floormod(index, extent)
        out.append(index)
        stride *= extent
    return out


def thread_dim_strides(extents: tuple[int, ...]) -> list[int]:
    """How far apart, in the linear index, two threads one step apart along each dim are."""
    return [math.prod(extents[:k]) for k in range(len(extents))]


def _flatten(launch: S.KernelLaunch) -> S.Stmt:
    if len(launch.threads) == 1:
        return launch
    flat = E.Var(dt.int32, launch.thread_vars[0].name)
    dims = thread_dim_indices(flat, launch.threads)
    body = substitute(launch.body, dict(zip(launch.thread_vars, dims)))
    return dataclasses.replace(launch, threads=(math.prod(launch.threads),), thread_vars=(flat,), body=body)


@module_pass("flatten-thread-dims")
def flatten_thread_dims(mod: IRModule, ctx) -> IRModule:
    """Every launch has one thread dim: `threads=(X, Y, Z)` is X * Y * Z threads, and each former thread
    index an expression of the linear one (x fastest)."""
    return map_launches(mod, _flatten)
