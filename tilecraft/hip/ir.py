"""Statements only the HIP pipeline produces; its code generator prints them."""

from __future__ import annotations

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import node
from tilecraft.ir.stmt import Stmt


@node
class MfmaGemm(Stmt):
    """One work-group tile of `C += op(A) @ op(B)` on MFMA (`tc::mfma_gemm` in tc_mfma.h).

    `a` and `b` are whole shared (LDS) tiles, stored in `layout_a` / `layout_b` (an `LdsLayout`, or None
    for row-major: the layouts their accesses were addressed with); `c` is the accumulator fragment's
    register array in the `mfma_accumulator` layout of a `waves_m` x `waves_n` grid of wavefronts. `kind`
    names the instruction: "f16", "bf16" (16x16x16), or "fp8" (16x16x32; `e5m2_a` / `e5m2_b` say e5m2
    for the bf8 forms, and `fnuz` that the arch reads fp8 as the FNUZ encodings, gfx942). `kpack`: each
    lane reads 16 bytes of k at once, for two MFMAs (k a multiple of twice the instruction's).
    """

    a: Buffer
    b: Buffer
    c: Buffer
    m: int
    n: int
    k: int
    waves_m: int
    waves_n: int
    trans_a: bool
    trans_b: bool
    kind: str
    e5m2_a: bool = False
    e5m2_b: bool = False
    fnuz: bool = False
    kpack: bool = False
    layout_a: object = None
    layout_b: object = None


def shared_accesses(node) -> tuple[tuple[Buffer, ...], tuple[Buffer, ...]] | None:
    """The buffers a HIP statement reads and writes, for barrier insertion (None: not ours)."""
    if isinstance(node, MfmaGemm):
        return (node.a, node.b), (node.c,)
    return None
