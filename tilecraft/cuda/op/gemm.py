"""T.gemm on CUDA: tensor cores (mma.sync m16n8k16 through ldmatrix from swizzled shared tiles) for
float16/bfloat16 operands with a float32 accumulator, a per-thread FMA loop otherwise."""

from __future__ import annotations

from tilecraft.cuda.ir import GemmCall
from tilecraft.cuda.op.gemm_plan import plan_gemm
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.transform.tile_loops import make_loop_vars, parallel_nest


def _whole(region: BufferRegion) -> bool:
    return all(E.const_value(r.min) == 0 for r in region.ranges) and all(
        E.const_value(r.extent) == E.const_value(d) for r, d in zip(region.ranges, region.buffer.shape)
    )


def lower_gemm(op: S.Gemm, ctx) -> S.Stmt:
    plan = plan_gemm(op, ctx.threads, ctx.target)
    if not plan.tensor_cores:
        return _fma(op, plan, ctx)
    for region, name in ((op.a, "A"), (op.b, "B"), (op.c, "C")):
        if not _whole(region):
            ctx.fail(f"T.gemm operand {name} must be a whole buffer on the tensor-core path", op.span,
                     "allocate a tile of exactly the gemm's shape")  # fmt: skip
    call = GemmCall(plan.variant, op.a.buffer, op.b.buffer, op.c.buffer, plan.m, plan.n, plan.k, plan.warps_m,
                    plan.warps_n, op.transpose_a, op.transpose_b, op.a.dtype == dt.bfloat16, span=op.span)  # fmt: skip
    if op.clear_accum:
        return S.seq(_clear(op, ctx), call)
    return call


def _clear(op: S.Gemm, ctx) -> S.Stmt:
    from tilecraft.cuda.op.copy import lower_fill

    return lower_fill(S.Fill(op.c, E.const(0, op.c.dtype), span=op.span), ctx)


def _offset(start, index):
    return index if E.const_value(start) == 0 else E.add(start, index)


def _element(region: BufferRegion, row, col):
    lead = [r.min for r in region.ranges[:-2]]
    r0, r1 = region.ranges[-2:]
    return E.BufferLoad(region.dtype, region.buffer, (*lead, _offset(r0.min, row), _offset(r1.min, col)))


def _fma(op: S.Gemm, plan, ctx) -> S.Stmt:
    """Each thread owns elements of C (its layout) and runs the k loop for them."""
    i, j = make_loop_vars(2, "g")
    k = ctx.var("k")
    a = _element(op.a, k, i) if op.transpose_a else _element(op.a, i, k)
    b = _element(op.b, j, k) if op.transpose_b else _element(op.b, k, j)
    c = _element(op.c, i, j)
    acc_dtype = op.c.dtype
    update = S.BufferStore(
        op.c.buffer, E.add(c, E.mul(E.cast(a, acc_dtype), E.cast(b, acc_dtype))), c.indices
    )
    body = S.For(k, E.const(0), E.const(plan.k), S.ForKind.SERIAL, update, span=op.span)
    if op.clear_accum:
        body = S.seq(S.BufferStore(op.c.buffer, E.const(0, acc_dtype), c.indices), body)
    nest = parallel_nest([i, j], [E.const(plan.m), E.const(plan.n)], body, op.span)
    if op.c.buffer.scope == "local.fragment":
        layout = ctx.layout(op.c.buffer, op.span)
    else:
        from tilecraft.layout.tile import blocked_layout

        layout = blocked_layout((plan.m, plan.n), ctx.threads, acc_dtype)
    return S.For(
        nest.loop_var, nest.min, nest.extent, nest.kind, nest.body, (("layout", layout),), span=op.span
    )
