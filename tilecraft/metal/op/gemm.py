"""T.gemm on Metal: `simdgroup_matrix` 8x8 multiply-accumulate on apple7 and later, the shared per-thread
FMA loop otherwise.

The simdgroup path takes A and B from threadgroup memory (float32 or float16, either transposed) and a
float32 C of 8-multiple M, N and K. The 8x8 tiles of C are dealt round-robin to the SIMD groups; each
runs `tc_simdgroup_gemm` (include/tc_metal.h) on its tiles: load the C tile, multiply-accumulate the
row of A tiles with the column of B tiles, store. A simdgroup_matrix spreads its elements over the SIMD
group's lanes in a layout MSL does not specify, so a fragment C is staged through a threadgroup tile
by the `stage-simdgroup-gemms` pass, before layout inference and only where the tile fits the
threadgroup memory: copied there (not when the gemm clears it), multiplied in place, copied back
(the FMA loop takes the gemm otherwise, in registers); `insert-barriers` orders
the copies and the matrix loads and stores (`shared_accesses` tells it what a gemm call touches). A C
in threadgroup memory is multiplied where it is.
"""

from __future__ import annotations

import dataclasses

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.metal.printer import SIMDGROUP_GEMM
from tilecraft.metal.simt import SIMD_WIDTH
from tilecraft.transform.simt.gemm import gemm_shape, staged_fma_gemm

SHARED = ("shared", "shared.dyn")
FRAGMENT = "local.fragment"
TILE = 8


def lower_gemm(op: S.Gemm, ctx) -> S.Stmt:
    """The op-table entry: simdgroup_matrix for a threadgroup C (a fragment C was staged through one by
    `stage-simdgroup-gemms` where that fits), the FMA loop otherwise."""
    if op.b.buffer.scope == FRAGMENT:
        ctx.fail("T.gemm operand B cannot be a fragment", op.span, "keep B in a shared buffer")
    m, n, k = gemm_shape(op, ctx.target)
    laid_out = any(id(r.buffer) in ctx.shared_layouts for r in (op.a, op.b, op.c))
    if (
        laid_out
        or not simdgroup_fits(op, m, n, k, ctx.target, ctx.threads)
        or op.c.buffer.scope not in SHARED
    ):
        return staged_fma_gemm(op, m, n, k, ctx)
    return _tile_loop(op, op.c, m, n, k, op.clear_accum, ctx)


def _plain_rows(region: BufferRegion) -> bool:
    """A row-major buffer with a static row length."""
    buf = region.buffer
    return not buf.strides and len(buf.shape) >= 2 and isinstance(E.const_value(buf.shape[-1]), int)


def simdgroup_fits(op: S.Gemm, m: int, n: int, k: int, target, threads: int) -> bool:
    """Whether the simdgroup_matrix path takes this gemm (its C in threadgroup memory or staged there)."""
    instruction = target.capabilities.matrix_instruction("simdgroup_matrix")
    if instruction is None or threads % SIMD_WIDTH:
        return False
    if m % TILE or n % TILE or k % TILE:
        return False
    a, b, c = op.a, op.b, op.c
    if a.buffer.scope not in SHARED or b.buffer.scope not in SHARED or a.dtype != b.dtype:
        return False
    if (
        a.dtype.name not in instruction.operands
        or c.dtype.name not in instruction.accumulators
        or c.buffer.scope not in (*SHARED, FRAGMENT)
    ):
        return False
    return _plain_rows(a) and _plain_rows(b) and (c.buffer.scope == FRAGMENT or _plain_rows(c))


def staged(op: S.Gemm, m: int, n: int) -> S.Stmt:
    """The gemm with its fragment C staged through a threadgroup tile (tile-level IR)."""
    stage = Buffer(
        f"{op.c.buffer.name}_simdgroup", (E.const(m), E.const(n)), dt.float32, "shared.dyn", span=op.span
    )
    whole = stage.full_region()
    body = [] if op.clear_accum else [S.Copy(op.c, whole, span=op.span)]
    body += [dataclasses.replace(op, c=whole), S.Copy(whole, op.c, span=op.span)]
    return S.Allocate(stage, S.seq(*body), span=op.span)


def _row_length(region: BufferRegion) -> int:
    return E.const_value(region.buffer.shape[-1])


def _at(region: BufferRegion, row, col) -> E.BufferLoad:
    """The element (row, col) of a region's last two dims, its leading dims at their starts."""
    lead = [r.min for r in region.ranges[:-2]]
    r0, r1 = region.ranges[-2:]
    return E.BufferLoad(region.dtype, region.buffer, (*lead, E.add(r0.min, row), E.add(r1.min, col)))


def _tile_loop(op: S.Gemm, c: BufferRegion, m: int, n: int, k: int, clear: bool, ctx) -> S.Stmt:
    """One call of the header's tc_simdgroup_gemm: SIMD group w takes C's tiles w, w + groups, ..."""
    zero = E.const(0)
    args = (
        _at(c, zero, zero), _row_length(c), _at(op.a, zero, zero), _row_length(op.a), int(op.transpose_a),
        _at(op.b, zero, zero), _row_length(op.b), int(op.transpose_b), m // TILE, n // TILE, k // TILE,
        int(clear), ctx.warp, ctx.threads // ctx.simt.width,
    )  # fmt: skip
    call = E.Call(dt.int32, SIMDGROUP_GEMM, tuple(E.convert(a) for a in args))
    return S.Evaluate(call, span=op.span)


def shared_accesses(node) -> tuple[list[Buffer], list[Buffer]] | None:
    """For `insert-barriers`: a simdgroup gemm reads its A and B tiles and reads and writes its C tile."""
    if isinstance(node, S.Evaluate) and isinstance(node.value, E.Call) and node.value.op == SIMDGROUP_GEMM:
        c, a, b = node.value.args[0], node.value.args[2], node.value.args[5]
        return [a.buffer, b.buffer, c.buffer], [c.buffer]
    return None
