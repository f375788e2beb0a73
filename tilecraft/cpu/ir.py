"""Statements only the CPU pipeline produces; its C codegen prints them."""

from __future__ import annotations

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, node
from tilecraft.ir.stmt import Stmt


@node
class MatmulCall(Stmt):
    """`C[m, n] (+)= sum_k A[m, k] * B[k, n]` on row/column strides, by the header's blocked kernel.

    B and C are contiguous along n; A may have any strides (its elements are broadcast).
    """

    a: Buffer
    a_offset: Expr
    a_strides: tuple[int, int]
    b: Buffer
    b_offset: Expr
    b_row_stride: int
    c: Buffer
    c_offset: Expr
    c_row_stride: int
    m: int
    n: int
    k: int


@node
class CheckFailed(Stmt):
    """A check the kernel makes at run time has failed: the call records `message` (with the statement's
    line) and raises once the kernel returns; the block goes on."""

    message: str
