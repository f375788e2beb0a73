"""T.gemm as per-thread multiply-adds, for SIMT targets (and for gemms a target's matrix units cannot take).

Each thread owns elements of C (C's layout, or the default one for a shared C) and runs the k loop for
them, reading A and B from shared or global memory. A fragment A operand is first staged through a
shared tile, since the row of A a thread needs is spread over other threads' registers.
"""

from __future__ import annotations

import dataclasses

from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.visitor import substitute
from tilecraft.transform.simt.copy import with_layout
from tilecraft.transform.tile_loops import make_loop_vars, parallel_nest

FRAGMENT = "local.fragment"


def _static(op: S.Gemm, e, what: str, target) -> int:
    value = E.const_value(e)
    if not isinstance(value, int):
        raise LoweringError(f"T.gemm {what} must be static on this target, got {e}", op.span, target=target)
    return value


def gemm_shape(op: S.Gemm, target) -> tuple[int, int, int]:
    """(M, N, K) of a gemm, all static."""
    a = [r.extent for r in op.a.ranges][-2:]
    c = [r.extent for r in op.c.ranges][-2:]
    m, n = _static(op, c[0], "M", target), _static(op, c[1], "N", target)
    k = _static(op, a[0] if op.transpose_a else a[1], "K", target)
    return m, n, k


def _offset(start, index):
    return index if E.const_value(start) == 0 else E.add(start, index)


def _element(region: BufferRegion, row, col):
    lead = [r.min for r in region.ranges[:-2]]
    r0, r1 = region.ranges[-2:]
    return E.BufferLoad(region.dtype, region.buffer, (*lead, _offset(r0.min, row), _offset(r1.min, col)))


def fma_gemm(op: S.Gemm, m: int, n: int, k_extent: int, ctx) -> S.Stmt:
    """A T.Parallel nest over C whose body is the k loop; A and B must not be fragments (see
    `staged_fma_gemm`)."""
    i, j = make_loop_vars(2, "g")
    k = ctx.var("k")
    a = _element(op.a, k, i) if op.transpose_a else _element(op.a, i, k)
    b = _element(op.b, j, k) if op.transpose_b else _element(op.b, k, j)
    c = _element(op.c, i, j)
    acc_dtype = op.c.dtype
    update = S.BufferStore(
        op.c.buffer, E.add(c, E.mul(E.cast(a, acc_dtype), E.cast(b, acc_dtype))), c.indices
    )
    if op.c.buffer.scope == FRAGMENT:
        layout = ctx.layout(op.c.buffer, op.span)
    else:
        layout = ctx.blocked((m, n), acc_dtype)

    def over_c(body: S.Stmt) -> S.For:
        i2, j2 = make_loop_vars(2, "g")
        body = substitute(body, {i: i2, j: j2})
        return with_layout(parallel_nest([i2, j2], [E.const(m), E.const(n)], body, op.span), layout)

    # The k loop outside the nest over C: each k step updates all of a thread's C elements, which are
    # independent, instead of one element's whole chain of k dependent multiply-adds at a time. Every
    # element still sums its products in k order, so the result is the same to the bit.
    steps = S.For(k, E.const(0), E.const(k_extent), S.ForKind.SERIAL, over_c(update), span=op.span)
    if not op.clear_accum:
        return steps
    return S.seq(over_c(S.BufferStore(op.c.buffer, E.const(0, acc_dtype), c.indices)), steps)


def staged_fma_gemm(op: S.Gemm, m: int, n: int, k_extent: int, ctx, staged_layout=None) -> S.Stmt:
    """`fma_gemm`, with a fragment A operand first copied to a shared tile: each thread's k loop reads a
    whole row of A, which other threads hold. The copy is a T.copy the caller lowers again.
    `staged_layout(shape)`: the target's layout for that tile (a swizzle that keeps the k loop's reads
    of several rows off one bank), or None for row-major."""
    if op.a.buffer.scope != FRAGMENT:
        return fma_gemm(op, m, n, k_extent, ctx)
    shape = tuple(_static(op, r.extent, "A extents", ctx.target) for r in op.a.ranges)
    staged = Buffer(f"{op.a.buffer.name}_staged", tuple(E.const(d) for d in shape), op.a.dtype, "shared.dyn",
                    span=op.span)  # fmt: skip
    whole = staged.full_region()
    gemm = fma_gemm(dataclasses.replace(op, a=whole), m, n, k_extent, ctx)
    layout = staged_layout(shape) if staged_layout is not None else None
    annotation = []
    if layout is not None:
        ctx.shared_layouts[id(staged)] = layout
        annotation = [S.AnnotateLayout(staged, layout, span=op.span)]
    return S.Allocate(staged, S.seq(*annotation, S.Copy(op.a, whole, span=op.span), gemm), span=op.span)


def lower_fma_gemm(op: S.Gemm, ctx) -> S.Stmt:
    """The op-table entry: multiply-adds, with a fragment A staged through shared memory."""
    if op.b.buffer.scope == FRAGMENT:
        ctx.fail("T.gemm operand B cannot be a fragment", op.span, "keep B in a shared buffer")
    m, n, k = gemm_shape(op, ctx.target)
    return staged_fma_gemm(op, m, n, k, ctx)
