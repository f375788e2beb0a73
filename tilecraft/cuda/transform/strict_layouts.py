"""The layouts CUDA instructions impose: mma/wgmma accumulators and register operands, swizzled shared
operand tiles for tensor-core gemms. The shared `infer-layouts` pass starts from these."""

from __future__ import annotations

from collections.abc import Iterator

from tilecraft.cuda.op.gemm_plan import WGMMA_VARIANTS, GemmPlan, is_int8, is_tf32, recorded_plan
from tilecraft.cuda.shared_layout import SharedLayout, swizzle16, swizzle32, wgmma_operand, xor_rows
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.visitor import walk

FRAGMENT = "local.fragment"


def cuda_strict_layouts(op: S.TileOp, threads: int, target) -> Iterator[tuple[Buffer, object, str]]:
    """The layouts a gemm's recorded plan (select-gemm-instructions) imposes on its tiles."""
    if isinstance(op, S.Gemm):
        yield from gemm_layouts(op, recorded_plan(op))


def gemm_layouts(op: S.Gemm, plan: GemmPlan) -> Iterator[tuple[Buffer, object, str]]:
    """The layouts `plan` imposes: swizzled shared operand tiles, the accumulator's and a register A's."""
    if plan.tensor_cores:
        for region, atom in ((op.a, plan.atom_a), (op.b, plan.atom_b)):
            # 16-bit tiles feed ldmatrix or wgmma, float8 tiles wgmma (K-major) or, row-major, the
            # element-wise reads of tc::gemm_ss_fp8, float32 tiles of TF32 gemms the 32-bit reads of
            # tc::gemm_ss_tf32 / gemm_rs_tf32
            wgmma_fp8 = plan.variant in WGMMA_VARIANTS and region.buffer.dtype.bits == 8
            tf32, int8 = is_tf32(op), is_int8(op)  # int8: ldmatrix on the tile read as 16-bit pairs
            if region.buffer.scope in SHARED and (region.buffer.dtype.bits == 16 or wgmma_fp8 or tf32 or int8):
                yield (
                    region.buffer,
                    _operand_layout(region.buffer, plan, atom),
                    "a tensor-core operand of T.gemm",
                )
    if op.c.buffer.scope == FRAGMENT and plan.c_layout is not None:
        yield op.c.buffer, plan.c_layout, "the accumulator of T.gemm"
    if op.a.buffer.scope == FRAGMENT and plan.a_layout is not None:
        yield op.a.buffer, plan.a_layout, "the register operand A of T.gemm"


def _operand_layout(buf: Buffer, plan: GemmPlan, atom: int) -> SharedLayout:
    row_length = E.const_value(buf.shape[-1])
    if plan.variant in WGMMA_VARIANTS or (plan.variant == "ss" and atom):  # an mma.sync gemm may read a
        # tile in the canonical layout a wgmma gemm gave it (select-gemm-instructions)
        return wgmma_operand(E.const_value(buf.shape[-2]), row_length, atom, buf.dtype.bytes)
    if buf.dtype.bits == 32:
        return swizzle32(row_length)
    return swizzle16(row_length, buf.dtype.bytes)


def row_read_operands(op: S.Gemm) -> list:
    """The operand regions a per-thread FMA gemm reads along their rows (A (M, K), B (N, K)): each k
    step of a warp reads one element of several rows."""
    return [r for r, along in ((op.a, not op.transpose_a), (op.b, op.transpose_b)) if along]


def fma_operand_layouts(body: S.Stmt):
    """Strict layouts for the shared tiles FMA gemms read along their rows: `xor_rows`, so the rows a
    warp reads at once are on different banks. Only for 32-bit tiles that no gemm of another kind
    (tensor cores, TF32) reads: those have their own layouts, and a tile has one."""
    claimed = {id(r.buffer) for op in walk(body) if isinstance(op, S.Gemm) and not _exact_float32(op)
               for r in (op.a, op.b)}  # fmt: skip

    def strict(op: S.TileOp, threads: int, target) -> Iterator[tuple[Buffer, object, str]]:
        if not isinstance(op, S.Gemm) or not _exact_float32(op):
            return
        if recorded_plan(op).tensor_cores:
            return
        for region in row_read_operands(op):
            buf = region.buffer
            layout = xor_rows(E.const_value(buf.shape[-1])) if buf.scope in SHARED else None
            if layout is not None and id(buf) not in claimed:
                yield buf, layout, "an operand T.gemm reads along its rows with per-thread multiply-adds"

    return strict


def _exact_float32(op: S.Gemm) -> bool:
    """A gemm of float32 operands and accumulator that asks for no TF32: it runs as per-thread FMA."""
    return all(r.dtype.name == "float32" for r in (op.a, op.b, op.c)) and not is_tf32(op)


def fragment_source_layouts(body: S.Stmt):
    """Strict layouts for the shared tiles copied into a gemm's register A operand (directly or through
    copies between fragments of its shape, such as a cast): `swizzle16` for 16-bit tiles, `swizzle32` for
    32-bit ones with rows of a power of two >= 32 elements. The copy reads the tile in the operand's mma
    layout, 8 rows x 4 columns per warp access; rows of a multiple of 128 bytes put those on the same
    banks (mhc_pre's bfloat16 x tile read into its TF32 operand: 8-way on every element), the swizzle on
    8 different ones. Both swizzles permute 16-byte chunks within 128-byte lines, so accesses along rows
    (the cp.async fill) stay free of conflicts. Only for 2-D tiles whose copies are all fills from global
    memory or reads into fragments, and that no gemm reads (those keep the gemm's layout). Not for exact
    float32 gemms: their fragment A is staged for the FMA loop, in no mma layout."""
    copies = [op for op in walk(body) if isinstance(op, S.Copy)]
    gemms = [op for op in walk(body) if isinstance(op, S.Gemm)]
    claimed = {id(r.buffer) for op in gemms for r in (op.a, op.b, op.c)}
    operands = {id(op.a.buffer) for op in gemms if op.a.buffer.scope == FRAGMENT and not _exact_float32(op)}
    grown = True
    while grown:  # fragments copied into an operand fragment of the same shape have its layout
        before = len(operands)
        operands |= {id(op.src.buffer) for op in copies if id(op.dst.buffer) in operands
                     and op.src.buffer.scope == FRAGMENT and _dims(op.src.buffer) == _dims(op.dst.buffer)}  # fmt: skip
        grown = len(operands) > before
    sources: dict[int, Buffer] = {}
    for op in copies:
        src, dst = op.src.buffer, op.dst.buffer
        if src.scope in SHARED and dst.scope == FRAGMENT and id(dst) in operands:
            sources[id(src)] = src
        elif not (src.scope == "global" and dst.scope in SHARED):
            claimed |= {id(b) for b in (src, dst) if b.scope in SHARED}

    def strict(op: S.TileOp, threads: int, target) -> Iterator[tuple[Buffer, object, str]]:
        if not isinstance(op, S.Copy) or id(op.src.buffer) not in sources or id(op.src.buffer) in claimed:
            return
        layout = _fragment_source_layout(op.src.buffer)
        if layout is not None:
            yield op.src.buffer, layout, "a shared tile read into a fragment"

    return strict


def _dims(buf: Buffer) -> tuple:
    return tuple(E.const_value(d) for d in buf.shape)


def _fragment_source_layout(buf: Buffer) -> SharedLayout | None:
    if len(buf.shape) < 2:
        return None
    row_length = E.const_value(buf.shape[-1])
    if buf.dtype.bits == 16:
        return swizzle16(row_length)
    if buf.dtype.bits == 32 and row_length >= 32 and row_length & (row_length - 1) == 0:
        return swizzle32(row_length)
    return None
