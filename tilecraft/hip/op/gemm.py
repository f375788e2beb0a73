"""T.gemm on an AMD GPU: MFMA (see gemm_plan.py) with a fragment A first staged through a shared tile,
a per-work-item FMA loop otherwise. The MFMA call reads its tiles in the LDS layouts their accesses are
addressed with (apply-lds-layouts): the ones layout inference gave them, and the swizzle for a staged A."""

from __future__ import annotations

from tilecraft.hip.ir import MfmaGemm
from tilecraft.hip.lds_layout import operand_layout
from tilecraft.hip.op.gemm_plan import FRAGMENT, plan_gemm
from tilecraft.hip.target import arch_info
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.transform.simt.copy import lower_fill
from tilecraft.transform.simt.gemm import staged_fma_gemm


def lower_gemm(op: S.Gemm, ctx) -> S.Stmt:
    plan = plan_gemm(op, ctx.threads, ctx.target, ctx.simt.width)
    if not plan.mfma:
        return staged_fma_gemm(op, plan.m, plan.n, plan.k, ctx)
    a, staging, layout_a = op.a.buffer, None, ctx.shared_layouts.get(id(op.a.buffer))
    if a.scope == FRAGMENT:
        # MFMA reads A per lane in its own operand layout; a fragment's registers hold another one, so
        # A goes through a shared tile (the copy is a T.copy, lowered again by the caller) in the LDS
        # layout, annotated for apply-lds-layouts to address the copy's stores.
        a = Buffer(f"{op.a.buffer.name}_staged", tuple(r.extent for r in op.a.ranges), op.a.dtype, "shared.dyn",
                   span=op.span)  # fmt: skip
        layout_a = operand_layout(a)
        note = S.AnnotateLayout(a, layout_a, span=op.span) if layout_a is not None else None
        staging = S.seq(note, S.Copy(op.a, a.full_region(), span=op.span))
    fnuz = arch_info(ctx.target).fp8_encoding == "fnuz"
    call = MfmaGemm(a, op.b.buffer, op.c.buffer, plan.m, plan.n, plan.k, plan.waves_m, plan.waves_n,
                    op.transpose_a, op.transpose_b, plan.kind, op.a.dtype.name == "float8_e5m2",
                    op.b.dtype.name == "float8_e5m2", fnuz and plan.kind == "fp8", plan.kpack, layout_a,
                    ctx.shared_layouts.get(id(op.b.buffer)), span=op.span)  # fmt: skip
    body = S.seq(_clear(op, ctx) if op.clear_accum else None, staging, call)
    return S.Allocate(a, body, span=op.span) if staging is not None else body


def _clear(op: S.Gemm, ctx) -> S.Stmt:
    return lower_fill(S.Fill(op.c, E.const(0, op.c.dtype), span=op.span), ctx)
