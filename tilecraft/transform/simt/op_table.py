"""The op table a SIMT target starts from: every tile op but T.gemm has one shared lowering for a block
of threads; a backend names its gemm (its matrix units, or FMA) and may bring its own copies."""

from __future__ import annotations

from collections.abc import Callable

from tilecraft.ir import stmt as S
from tilecraft.transform.simt.atomic import lower_atomic
from tilecraft.transform.simt.copy import lower_copy, lower_fill
from tilecraft.transform.simt.reduce import lower_cumsum, lower_finalize_reducer, lower_reduce


def simt_op_table(
    lower_gemm: Callable, lower_copy: Callable = lower_copy, lower_fill: Callable = lower_fill
) -> dict[type, Callable]:
    """How each tile op lowers for a block of threads, with the backend's gemm (and copy and fill)."""
    return {
        S.Copy: lower_copy,
        S.Fill: lower_fill,
        S.Gemm: lower_gemm,
        S.Reduce: lower_reduce,
        S.Cumsum: lower_cumsum,
        S.AtomicOp: lower_atomic,
        S.FinalizeReducer: lower_finalize_reducer,
    }
