"""Gemm on the CPU: operands are staged into the layout the header's register-blocked kernel wants.

The kernel (`tc_matmul_*` in include/tc_cpu.h) broadcasts A's elements and streams B and C rows as
vectors, so it needs B (rows or column panels) and C contiguous along n and float32/float64 elements.
Other dtypes and transposed B are first copied into per-block staging buffers (`T.Parallel` loops the
compiler vectorizes); the O(m*n*k) work always runs in the blocked kernel. Integer gemms use plain
loops. `PanelGemm` (a B tile the `gemm-b-panels` pass stored as column panels) passes its panels as
they are.
"""

from __future__ import annotations

from tilecraft.cpu.ir import MatmulCall, PanelGemm
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.expr import Expr, Var


def _static(op: S.Gemm, e: Expr, what: str, ctx) -> int:
    value = E.const_value(e)
    if not isinstance(value, int):
        raise LoweringError(f"T.gemm {what} must be static on this target, got {e}", op.span,
                            "give the tiles compile-time shapes", target=ctx.target)  # fmt: skip
    return value


def _matrix(r: BufferRegion) -> tuple[list[Range], int]:
    """The two trailing ranges of a region (leading unit dims dropped) and the index of the first."""
    first = len(r.ranges) - 2
    return list(r.ranges[first:]), first


def _strides(buf: Buffer) -> list[int]:
    dims = [E.const_value(s) for s in buf.shape]
    strides, acc = [], 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d if isinstance(d, int) else 0
    return list(reversed(strides))


def _offset(r: BufferRegion) -> Expr:
    offset: Expr = E.const(0)
    for rng, stride in zip(r.ranges, _strides(r.buffer)):
        offset = E.add(offset, E.mul(rng.min, stride)) if stride else offset
    return offset


def _compute_dtype(a: dt.DataType) -> dt.DataType:
    return dt.float64 if a == dt.float64 else dt.float32


def _stage(name: str, rows: int, cols: int, dtype: dt.DataType) -> Buffer:
    return Buffer(name, (E.const(rows), E.const(cols)), dtype, "local")


def _copy_loops(dst: Buffer, rows: int, cols: int, load) -> S.Stmt:
    i, j = Var(dt.int32, "gi"), Var(dt.int32, "gj")
    body = S.BufferStore(dst, E.cast(load(i, j), dst.dtype), (i, j))
    inner = S.For(j, E.const(0), E.const(cols), S.ForKind.PARALLEL, body)
    return S.For(i, E.const(0), E.const(rows), S.ForKind.SERIAL, inner)


def _element(r: BufferRegion, row: Expr, col: Expr) -> E.BufferLoad:
    ranges, first = _matrix(r)
    index = [rng.min for rng in r.ranges[:first]]
    index += [E.add(ranges[0].min, row), E.add(ranges[1].min, col)]
    return E.BufferLoad(r.dtype, r.buffer, tuple(index))


def lower_gemm(op: S.Gemm, ctx) -> S.Stmt:
    (ra0, ra1), _ = _matrix(op.a)
    (rb0, rb1), _ = _matrix(op.b)
    (rc0, rc1), _ = _matrix(op.c)
    m, n = _static(op, rc0.extent, "M", ctx), _static(op, rc1.extent, "N", ctx)
    k = _static(op, (ra0 if op.transpose_a else ra1).extent, "K", ctx)
    if op.a.dtype.is_integer:
        return _integer_gemm(op, m, n, k)
    return _blocked_gemm(op, m, n, k)


def _integer_gemm(op: S.Gemm, m: int, n: int, k: int) -> S.Stmt:
    i, j, kk = Var(dt.int32, "gi"), Var(dt.int32, "gj"), Var(dt.int32, "gk")
    a = _element(op.a, kk, i) if op.transpose_a else _element(op.a, i, kk)
    b = _element(op.b, j, kk) if op.transpose_b else _element(op.b, kk, j)
    c = _element(op.c, i, j)
    prod = E.mul(E.cast(a, op.c.dtype), E.cast(b, op.c.dtype))
    update = S.BufferStore(op.c.buffer, E.add(c, prod), c.indices)
    loop = S.For(kk, E.const(0), E.const(k), S.ForKind.SERIAL, update)
    loop = S.For(j, E.const(0), E.const(n), S.ForKind.SERIAL, loop)
    loop = S.For(i, E.const(0), E.const(m), S.ForKind.SERIAL, loop, span=op.span)
    return S.seq(_clear(op, m, n), loop) if op.clear_accum else loop


def _clear(op: S.Gemm, m: int, n: int) -> S.Stmt:
    return _copy_loops_region(op.c, m, n, lambda i, j: E.const(0, op.c.dtype))


def _copy_loops_region(r: BufferRegion, rows: int, cols: int, value) -> S.Stmt:
    i, j = Var(dt.int32, "gi"), Var(dt.int32, "gj")
    target = _element(r, i, j)
    body = S.BufferStore(r.buffer, E.cast(value(i, j), r.dtype), target.indices)
    inner = S.For(j, E.const(0), E.const(cols), S.ForKind.PARALLEL, body)
    return S.For(i, E.const(0), E.const(rows), S.ForKind.SERIAL, inner)


def _contiguous_rows(r: BufferRegion, dtype: dt.DataType) -> bool:
    """Elements along the last dim are adjacent and of the compute dtype."""
    return (
        r.dtype == dtype
        and all(isinstance(E.const_value(s), int) for s in r.buffer.shape)
        and not r.buffer.strides
    )


def lower_panel_gemm(op: PanelGemm, ctx) -> S.Stmt:
    """The gemm on a B tile stored as column panels (`gemm-b-panels`): the panels go to the kernel as they are."""
    rc0, rc1 = _matrix(op.c)[0]
    m, n = _static(op, rc0.extent, "M", ctx), _static(op, rc1.extent, "N", ctx)
    _, k, width = (E.const_value(d) for d in op.b.shape)
    return _blocked_gemm(op, m, n, k, lambda *_: (op.b, E.const(0), width, k * width), op.rows)


def _blocked_gemm(op: S.Gemm | PanelGemm, m: int, n: int, k: int, b_operand=None, rows=None) -> S.Stmt:
    cdt = _compute_dtype(op.a.dtype)
    stmts: list[S.Stmt] = []
    allocs: list[Buffer] = []

    a_buf, a_off, a_strides = _a_operand(op, m, k, cdt, stmts, allocs)
    b_buf, b_off, b_row, b_panel = (b_operand or _b_operand)(op, n, k, cdt, stmts, allocs)
    c_direct = _contiguous_rows(op.c, cdt)
    if c_direct:
        c_buf, c_off, c_row = op.c.buffer, _offset(op.c), _strides(op.c.buffer)[-2]
        if op.clear_accum:
            stmts.append(_clear(op, m, n))
    else:
        c_buf = _stage("c_stage", m, n, cdt)
        allocs.append(c_buf)
        c_off, c_row = E.const(0), n
        fill = (lambda i, j: E.const(0, cdt)) if op.clear_accum else (lambda i, j: _element(op.c, i, j))
        stmts.append(_copy_loops(c_buf, m, n, fill))
    m_run = m if rows is None else rows  # rows the kernel updates (gemm-live-rows may leave out dead ones)
    args = (a_buf, a_off, a_strides, b_buf, b_off, b_row, c_buf, c_off, c_row, m_run, n, k, b_panel)
    stmts.append(MatmulCall(*args, span=op.span))
    if not c_direct:
        stmts.append(_copy_loops_region(op.c, m, n, lambda i, j: E.BufferLoad(cdt, c_buf, (i, j))))
    body = S.seq(*stmts)
    for buf in reversed(allocs):
        body = S.Allocate(buf, body, span=op.span)
    return body


def _a_operand(op, m, k, cdt, stmts, allocs):
    if _contiguous_rows(op.a, cdt):
        rs, cs = _strides(op.a.buffer)[-2:]
        strides = (cs, rs) if op.transpose_a else (rs, cs)
        return op.a.buffer, _offset(op.a), strides
    buf = _stage("a_stage", m, k, cdt)
    allocs.append(buf)
    load = (lambda i, j: _element(op.a, j, i)) if op.transpose_a else (lambda i, j: _element(op.a, i, j))
    stmts.append(_copy_loops(buf, m, k, load))
    return buf, E.const(0), (k, 1)


def _b_operand(op, n, k, cdt, stmts, allocs):
    if not op.transpose_b and _contiguous_rows(op.b, cdt):
        return op.b.buffer, _offset(op.b), _strides(op.b.buffer)[-2], 0
    buf = _stage("b_stage", k, n, cdt)
    allocs.append(buf)
    load = (lambda i, j: _element(op.b, j, i)) if op.transpose_b else (lambda i, j: _element(op.b, i, j))
    stmts.append(_copy_loops(buf, k, n, load))
    return buf, E.const(0), n, 0
