"""The HIP op table: the shared SIMT lowerings (wavefront exchange for reductions) and MFMA gemms."""

from __future__ import annotations

from tilecraft.hip.op.gemm import lower_gemm
from tilecraft.transform.simt.op_table import simt_op_table

OP_TABLE = simt_op_table(lower_gemm)

__all__ = ["OP_TABLE"]
