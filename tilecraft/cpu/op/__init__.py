"""The CPU op table: how each tile op lowers when a block runs as one thread."""

from __future__ import annotations

from tilecraft.cpu.ir import PanelCopy, PanelGemm
from tilecraft.cpu.op.atomic import lower_atomic
from tilecraft.cpu.op.copy import lower_copy, lower_fill, lower_panel_copy
from tilecraft.cpu.op.gemm import lower_gemm, lower_panel_gemm
from tilecraft.cpu.op.reduce import lower_cumsum, lower_finalize_reducer, lower_reduce
from tilecraft.ir import stmt as S

OP_TABLE = {
    S.Copy: lower_copy,
    S.Fill: lower_fill,
    S.Gemm: lower_gemm,
    S.Reduce: lower_reduce,
    S.Cumsum: lower_cumsum,
    S.AtomicOp: lower_atomic,
    S.FinalizeReducer: lower_finalize_reducer,
    PanelCopy: lower_panel_copy,
    PanelGemm: lower_panel_gemm,
}

__all__ = ["OP_TABLE"]
