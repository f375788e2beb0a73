"""The layouts CUDA instructions impose: mma/wgmma accumulators and register operands, swizzled shared
operand tiles for tensor-core gemms. The shared `infer-layouts` pass starts from these."""

from __future__ import annotations

from collections.abc import Iterator

from tilecraft.cuda.op.gemm_plan import WGMMA_VARIANTS, GemmPlan, is_tf32, plan_gemm
from tilecraft.cuda.shared_layout import SharedLayout, swizzle16, swizzle32, wgmma_operand
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer

FRAGMENT = "local.fragment"


def cuda_strict_layouts(
    op: S.TileOp, threads: int, target, wgmma: bool = False
) -> Iterator[tuple[Buffer, object, str]]:
    """`wgmma` allows the sm_90a gemm path (gemm_plan.wgmma_enabled)."""
    if not isinstance(op, S.Gemm):
        return
    plan = plan_gemm(op, threads, target, wgmma)
    if plan.tensor_cores:
        for region, atom in ((op.a, plan.atom_a), (op.b, plan.atom_b)):
            # 16-bit tiles feed ldmatrix or wgmma, float8 tiles wgmma (K-major) or, row-major, the
            # element-wise reads of tc::gemm_ss_fp8, float32 tiles of TF32 gemms the 32-bit reads of
            # tc::gemm_ss_tf32 / gemm_rs_tf32
            wgmma_fp8 = plan.variant in WGMMA_VARIANTS and region.buffer.dtype.bits == 8
            tf32 = is_tf32(op)
            if region.buffer.scope in SHARED and (region.buffer.dtype.bits == 16 or wgmma_fp8 or tf32):
                yield (
                    region.buffer,
                    _operand_layout(region.buffer, plan, atom),
                    "a tensor-core operand of T.gemm",
                )
    if op.c.buffer.scope == FRAGMENT and plan.c_layout is not None:
        yield op.c.buffer, plan.c_layout, "the accumulator of T.gemm"
    if op.a.buffer.scope == FRAGMENT and plan.a_layout is not None:
        yield op.a.buffer, plan.a_layout, "the register operand A of T.gemm"


def _operand_layout(buf: Buffer, plan: GemmPlan, atom: int) -> SharedLayout:
    row_length = E.const_value(buf.shape[-1])
    if plan.variant in WGMMA_VARIANTS:
        return wgmma_operand(E.const_value(buf.shape[-2]), row_length, atom, buf.dtype.bytes)
    if buf.dtype.bits == 32:
        return swizzle32(row_length)
    return swizzle16(row_length)
