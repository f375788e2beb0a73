"""The layouts CUDA instructions impose: mma accumulators and register operands, swizzled shared
operand tiles for tensor-core gemms. The shared `infer-layouts` pass starts from these."""

from __future__ import annotations

from collections.abc import Iterator

from tilecraft.cuda.op.gemm_plan import plan_gemm
from tilecraft.cuda.shared_layout import swizzle16
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer

FRAGMENT = "local.fragment"


def cuda_strict_layouts(op: S.TileOp, threads: int, target) -> Iterator[tuple[Buffer, object, str]]:
    if not isinstance(op, S.Gemm):
        return
    plan = plan_gemm(op, threads, target)
    if plan.tensor_cores:
        for region in (op.a, op.b):
            # 16-bit tiles feed ldmatrix; float8 tiles are read element-wise (tc::gemm_ss_fp8), row-major
            if region.buffer.scope in ("shared", "shared.dyn") and region.buffer.dtype.bits == 16:
                row_length = E.const_value(region.buffer.shape[-1])
                yield region.buffer, swizzle16(row_length), "a tensor-core operand of T.gemm"
    if op.c.buffer.scope == FRAGMENT and plan.c_layout is not None:
        yield op.c.buffer, plan.c_layout, "the accumulator of T.gemm"
    if op.a.buffer.scope == FRAGMENT and plan.a_layout is not None:
        yield op.a.buffer, plan.a_layout, "the register operand A of T.gemm"
