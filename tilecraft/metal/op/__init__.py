"""The Metal op table: the shared SIMT lowerings, with T.gemm on simdgroup_matrix where it fits."""

from __future__ import annotations

from tilecraft.metal.op.gemm import lower_gemm
from tilecraft.transform.simt.op_table import simt_op_table

OP_TABLE = simt_op_table(lower_gemm)

__all__ = ["OP_TABLE"]
