"""The op table of the CuTe DSL variant: the cuda backend's, less the ops its codegen does not emit
(declared in the manifest's `unsupported`, refused by check.py with the kernel's line)."""

from __future__ import annotations

from tilecraft.cuda.op import OP_TABLE as CUDA_OP_TABLE
from tilecraft.ir import stmt as S

UNSUPPORTED_OPS = (S.Cumsum, S.AtomicOp)

OP_TABLE = {op: lower for op, lower in CUDA_OP_TABLE.items() if op not in UNSUPPORTED_OPS}
