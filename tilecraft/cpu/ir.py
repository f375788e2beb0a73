"""Statements only the CPU pipeline produces; its C codegen prints them."""

from __future__ import annotations

from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Expr, node
from tilecraft.ir.stmt import Stmt, TileOp


@node
class MatmulCall(Stmt):
    """`C[m, n] (+)= sum_k A[m, k] * B[k, n]` on row/column strides, by the header's blocked kernel.

    `m` may be computed at run time (rows of C past it are left as they are). C is contiguous along n; A may
    have any strides (its elements are broadcast). B is contiguous along
    n with rows `b_row_stride` apart, or, when `b_panel_stride` is set, stored in column panels
    `b_row_stride` columns wide, `b_panel_stride` elements apart (the layout `PanelCopy` writes).
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
    m: int | Expr
    n: int
    k: int
    b_panel_stride: int = 0


@node
class CheckFailed(Stmt):
    """A check the kernel makes at run time has failed: the call records `message` (with the statement's
    line) and raises once the kernel returns; the block goes on."""

    message: str


@node
class PanelCopy(TileOp):
    """`T.copy(src, B_s)` into a (rows, cols) tile stored as column panels: `dst` has shape
    (cols / width, rows, width), and logical element (r, c) lives at `dst[c // width, r, c % width]`.
    Loads past the tensor's edge read zero, as for `T.copy`."""

    src: BufferRegion
    dst: Buffer


@node
class PanelGemm(TileOp):
    """`T.gemm(a, B_s, c)` whose B tile is stored as column panels (`PanelCopy`'s layout of `b`).

    `rows`, when set, is how many leading rows of `c` the gemm updates (`gemm-live-rows`): the others
    are never stored, and their rows of `a` are zeros a copy read past the tensor's edge."""

    a: BufferRegion
    b: Buffer
    c: BufferRegion
    transpose_a: bool = False
    clear_accum: bool = False
    rows: Expr | None = None
