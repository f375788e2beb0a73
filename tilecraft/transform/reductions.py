"""Reductions and cumsum as serial loops with a scalar accumulator per output element.

The form a one-thread block runs directly, and the per-thread core that SIMT backends distribute.
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Expr, Var
from tilecraft.ir.op import FMAX, FMIN

# The bitwise combines of integers (S.BITWISE_REDUCE_KINDS) and their intrinsics.
_BITWISE = {"bitand": "bitwise_and", "bitor": "bitwise_or", "bitxor": "bitwise_xor"}


def identity(kind: str, dtype: dt.DataType, nan_propagate: bool = True) -> Expr:
    """The value a reduction starts from: for one that ignores NaN (a float max / min / absmax with
    `nan_propagate=False`), NaN itself, which fmax / fmin drop for any other operand, so that the result
    is NaN only when every element is."""
    if ignores_nan(kind, dtype, nan_propagate):
        return E.const(float("nan"), dtype)
    if kind in ("sum", "abssum", "absmax", "bitor", "bitxor"):
        return E.const(0, dtype)
    if kind == "bitand":  # every bit set: -1 of a signed type, the largest value of an unsigned one
        return E.const(_int_limit(dtype, True) if dtype.is_uint else -1, dtype)
    big = float("inf") if dtype.is_float else _int_limit(dtype, kind == "min")
    return E.const(big if kind == "min" else -big, dtype)


def _int_limit(dtype: dt.DataType, high: bool) -> int:
    import numpy as np

    info = np.iinfo(dt.numpy_dtype(dtype))
    return int(info.max) if high else -int(info.min)


def ignores_nan(kind: str, dtype: dt.DataType, nan_propagate: bool) -> bool:
    """Whether a reduction of `kind` over `dtype` values combines with fmax / fmin (NaN ignored)."""
    return not nan_propagate and dtype.is_float and kind in NAN_KINDS


# The reductions whose NaN handling `nan_propagate` chooses.
NAN_KINDS = ("max", "min", "absmax")


def combine(kind: str, acc: Expr, x: Expr, nan_propagate: bool = True) -> Expr:
    if kind in ("abssum", "absmax"):
        x = E.call("abs", x)
    if kind in ("sum", "abssum"):
        return E.add(acc, x)
    if ignores_nan(kind, acc.dtype, nan_propagate):
        return E.call(FMIN if kind == "min" else FMAX, acc, x, dtype=acc.dtype)
    if kind in ("max", "absmax"):
        return E.max_(acc, x)
    if kind in _BITWISE:
        return E.int_call(_BITWISE[kind], acc, x)
    return E.min_(acc, x)


def _element(region: BufferRegion, index: list[Expr]) -> tuple[Expr, ...]:
    return tuple(E.add(r.min, i) if E.const_value(r.min) != 0 else E.cast(i, r.min.dtype)
                 for r, i in zip(region.ranges, index))  # fmt: skip


def _dst_index(op_dst: BufferRegion, kept: list[Expr], dim: int, src_rank: int) -> tuple[Expr, ...]:
    index = list(kept)
    if len(op_dst.ranges) == src_rank:
        index.insert(dim, E.const(0))
    return _element(op_dst, index)


def _serial_nest(loop_vars: list[Var], extents: list[Expr], body: S.Stmt, span) -> S.Stmt:
    for var, extent in reversed(list(zip(loop_vars, extents))):
        body = S.For(var, E.const(0), extent, S.ForKind.SERIAL, body, span=span)
    return body


def reduce_loops(op: S.Reduce, ctx=None) -> S.Stmt:
    """dst[kept] = combine over src[..., r, ...] (starting from dst's value when clear=False)."""
    src, dst, rank = op.src, op.dst, len(op.src.ranges)
    extents = list(src.shape)
    red_extent = extents.pop(op.dim)
    kept_vars = [Var(dt.int32, f"r{k}") for k in range(rank - 1)]
    red_var = Var(dt.int32, "rk")
    acc = Buffer("acc", (E.const(1),), dst.dtype, "local.var")
    acc_load = E.BufferLoad(acc.dtype, acc, (E.const(0),))
    src_index = list(kept_vars)
    src_index.insert(op.dim, red_var)
    x = E.cast(E.BufferLoad(src.dtype, src.buffer, _element(src, src_index)), acc.dtype)
    dst_index = _dst_index(dst, kept_vars, op.dim, rank)
    nan = op.nan_propagate
    start = identity(op.kind, acc.dtype, nan) if op.clear else E.BufferLoad(dst.dtype, dst.buffer, dst_index)
    update = S.BufferStore(acc, combine(op.kind, acc_load, x, nan), (E.const(0),), span=op.span)
    hint = (("reduction", op.kind),)  # for a printer that vectorizes the loop (the combine says how)
    loop = S.For(red_var, E.const(0), red_extent, S.ForKind.SERIAL, update, hint, span=op.span)
    body = S.seq(
        S.BufferStore(acc, start, (E.const(0),), span=op.span),
        loop,
        S.BufferStore(dst.buffer, acc_load, dst_index, span=op.span),
    )
    return _serial_nest(kept_vars, extents, S.Allocate(acc, body, span=op.span), op.span)


def cumsum_loops(op: S.Cumsum, ctx=None) -> S.Stmt:
    """A running sum, max or min along dim (from the end when reverse); in place is safe: each element is
    read first."""
    src, dst, rank = op.src, op.dst, len(op.src.ranges)
    extents = list(src.shape)
    scan_extent = extents.pop(op.dim)
    kept_vars = [Var(dt.int32, f"scan{k}") for k in range(rank - 1)]
    step = Var(dt.int32, "ck")
    pos = E.sub(E.sub(scan_extent, 1), step) if op.reverse else step
    index = list(kept_vars)
    index.insert(op.dim, pos)
    acc = Buffer("run", (E.const(1),), dst.dtype, "local.var")
    acc_load = E.BufferLoad(acc.dtype, acc, (E.const(0),))
    x = E.cast(E.BufferLoad(src.dtype, src.buffer, _element(src, index)), acc.dtype)
    body = S.seq(
        S.BufferStore(acc, combine(op.kind, acc_load, x), (E.const(0),), span=op.span),
        S.BufferStore(dst.buffer, acc_load, _element(dst, index), span=op.span),
    )
    scan = S.For(step, E.const(0), scan_extent, S.ForKind.SERIAL, body, span=op.span)
    init = S.BufferStore(acc, identity(op.kind, acc.dtype), (E.const(0),), span=op.span)
    return _serial_nest(kept_vars, extents, S.Allocate(acc, S.seq(init, scan), span=op.span), op.span)
