"""The OpenCL op table: the shared SIMT lowerings (no matrix units, no warp shuffles)."""

from __future__ import annotations

from tilecraft.transform.simt.gemm import lower_fma_gemm
from tilecraft.transform.simt.op_table import simt_op_table

OP_TABLE = simt_op_table(lower_fma_gemm)

__all__ = ["OP_TABLE"]
