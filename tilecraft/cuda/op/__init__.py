"""The CUDA op table: how each tile op lowers for a block of threads."""

from __future__ import annotations

from tilecraft.cuda.op.copy import lower_copy, lower_fill
from tilecraft.cuda.op.gemm import lower_gemm
from tilecraft.transform.simt.op_table import simt_op_table

OP_TABLE = simt_op_table(lower_gemm, lower_copy, lower_fill)

__all__ = ["OP_TABLE"]
