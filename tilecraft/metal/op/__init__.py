"""The Metal op table: the shared SIMT lowerings, with T.gemm on simdgroup_matrix where it fits."""

from __future__ import annotations

from tilecraft.ir import stmt as S
from tilecraft.metal.op.gemm import lower_gemm
from tilecraft.transform.simt.atomic import lower_atomic
from tilecraft.transform.simt.copy import lower_copy, lower_fill
from tilecraft.transform.simt.reduce import lower_cumsum, lower_finalize_reducer, lower_reduce

OP_TABLE = {
    S.Copy: lower_copy,
    S.Fill: lower_fill,
    S.Gemm: lower_gemm,
    S.Reduce: lower_reduce,
    S.Cumsum: lower_cumsum,
    S.AtomicOp: lower_atomic,
    S.FinalizeReducer: lower_finalize_reducer,
}

__all__ = ["OP_TABLE"]
