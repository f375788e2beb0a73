"""T.gemm on CUDA: tensor cores for float16/bfloat16 operands with a float32 accumulator (wgmma
m64nNk16 from canonical swizzled shared tiles on sm_90a, mma.sync m16n8k16 through ldmatrix elsewhere
and where wgmma does not fit), float8 shared operands on wgmma m64nNk32 (sm_90a, both K-major) or
widened in registers for the f16 mma, a per-thread FMA loop otherwise (a fragment A operand staged
through a shared tile)."""

from __future__ import annotations

from tilecraft.cuda.ir import GemmCall
from tilecraft.cuda.op.gemm_plan import recorded_plan
from tilecraft.cuda.shared_layout import xor_rows
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.transform.simt.copy import lower_fill
from tilecraft.transform.simt.gemm import staged_fma_gemm
from tilecraft.transform.tile_loops import whole_region


def lower_gemm(op: S.Gemm, ctx) -> S.Stmt:
    """The instructions of the plan select-gemm-instructions recorded on `op`."""
    plan = recorded_plan(op)
    if not plan.tensor_cores:
        return _fma(op, plan, ctx)
    offsets = {}
    for region, name in ((op.a, "A"), (op.b, "B"), (op.c, "C")):
        offset = stacked_tile_offset(region) if region.buffer.scope in ("shared", "shared.dyn") else None
        if offset is not None:
            offsets[name] = offset
        elif not whole_region(region):
            ctx.fail(f"T.gemm operand {name} must be a whole buffer on the tensor-core path", op.span,
                     "allocate a tile of exactly the gemm's shape (a shared operand may also be one tile "
                     "of a stack of them: A_s[stage, :, :])")  # fmt: skip
    # in a thread group that is not the whole block, the warp is the group's (threadIdx.x / 32 is not)
    warp = None if ctx.group is None or ctx.group.whole else ctx.warp
    call = GemmCall(plan.variant, op.a.buffer, op.b.buffer, op.c.buffer, plan.m, plan.n, plan.k, plan.warps_m,
                    plan.warps_n, op.transpose_a, op.transpose_b, op.a.dtype == dt.bfloat16,
                    offsets.get("A", 0), offsets.get("B", 0), atom_a=plan.atom_a, atom_b=plan.atom_b, warp=warp,
                    span=op.span)  # fmt: skip
    if op.clear_accum:
        return S.seq(_clear(op, ctx), call)
    return call


def stacked_tile_offset(region) -> E.Expr | None:
    """The element offset of a region that is one whole 2-D tile of a stack of them (`A_s[stage, :, :]`:
    single indices in the leading dims, the last two dims whole; a whole 2-D buffer is offset 0), else None."""
    ranges, sizes = region.ranges, [E.const_value(d) for d in region.buffer.shape]
    if len(ranges) < 2 or not all(isinstance(x, int) for x in sizes):
        return None
    if any(
        E.const_value(r.min) != 0 or E.const_value(r.extent) != d for r, d in zip(ranges[-2:], sizes[-2:])
    ):
        return None
    if any(E.const_value(r.extent) != 1 for r in ranges[:-2]):
        return None
    offset: E.Expr = E.const(0)
    stride = sizes[-1] * sizes[-2]
    for r, size in zip(reversed(ranges[:-2]), reversed(sizes[:-2])):
        offset = E.add(offset, E.mul(r.min, stride))
        stride *= size
    return offset


def _clear(op: S.Gemm, ctx) -> S.Stmt:
    return lower_fill(S.Fill(op.c, E.const(0, op.c.dtype), span=op.span), ctx)


def _fma(op: S.Gemm, plan, ctx) -> S.Stmt:
    # Staged here, not handed back as a gemm of a shared A: that gemm would have no recorded plan, and
    # planned anew it could take a tensor-core path whose operand layout the staged tile, made after
    # layout inference, lacks. The
    # staged tile is read along its rows (unless A is transposed): xor_rows keeps them off one bank.
    def layout(shape: tuple[int, ...]):
        return xor_rows(shape[-1]) if op.a.dtype.bits == 32 and not op.transpose_a else None

    return staged_fma_gemm(op, plan.m, plan.n, plan.k, ctx, layout)
