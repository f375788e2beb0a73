"""T.copy of a 16-bit result from an mma / wgmma accumulator fragment into a shared tile with stmatrix.

`stmatrix.sync.aligned.m8n8.x4.shared.b16` (sm_90) stores four 8x8 matrices per warp from four 32-bit
registers per thread: register i of lane l holds row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1 of
matrix i, and lane l gives the shared address of row l % 8 of matrix l / 8 (PTX ISA, stmatrix: the
fragment layout of ldmatrix, which is the mma m16n8 accumulator's). Any fragment whose layout has that
form within each pair of registers qualifies: register bit 0 and lane bits 0-1 move along the row by 1,
2 and 4 columns, and every other input bit moves by whole 8-column chunks or rows (`matrices`). The mma
accumulator (c0 c1 / c2 c3 of each m16n8 tile are two matrices) and the wgmma accumulator (the same per
warp, PTX ISA "wgmma .m64nNk16 accumulator D") both have it. Each row of a matrix is then 8 consecutive
elements of one tile row starting at a multiple of 8: 16 contiguous, 16-byte aligned bytes in a
row-major tile whose rows are a multiple of 16 bytes and in the swizzled layouts, which permute whole
16-byte chunks. Registers go in groups of 2 * count (count = 4, 2 or 1 matrices per instruction).
"""

from __future__ import annotations

from tilecraft.cuda.ir import StMatrix
from tilecraft.cuda.shared_layout import SharedLayout
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import BufferRegion
from tilecraft.layout.linear import LinearLayout
from tilecraft.layout.tile import TileLayout
from tilecraft.transform.tile_loops import whole_region

ROW_BYTES = 16  # one row of an 8x8 matrix of 16-bit elements
ROW_STEPS = {("register", 0): 1, ("lane", 0): 2, ("lane", 1): 4}  # columns each input bit moves


def matrices(linear: LinearLayout) -> int | None:
    """Matrices per stmatrix (4, 2 or 1) for a 2-D fragment layout of this form (module docstring);
    None for other layouts."""
    if linear.in_bits("lane") != 5 or linear.in_bits("register") < 1:
        return None
    for (name, bit), step in ROW_STEPS.items():
        if linear.basis(name, bit) != {"dim0": 0, "dim1": step}:
            return None
    for name in linear.in_names:
        for bit in range(linear.in_bits(name)):
            if (name, bit) not in ROW_STEPS and linear.basis(name, bit)["dim1"] % 8:
                return None
    registers = linear.in_size("register")
    return next(count for count in (4, 2, 1) if registers % (2 * count) == 0)


def stmatrix_copy(op: S.Copy, frag: BufferRegion, ctx) -> S.Stmt | None:
    """The copy as stmatrix instructions, or None where the element copy must do (the caller checks
    that the copy is not under a condition on the thread index). The fragment side is the whole
    fragment, or all its rows and a block of its columns whose registers are whole instructions' groups
    (`column_groups`: an epilogue split by split-staging-tiles)."""
    dst = op.dst
    if frag is not op.src or dst.buffer.scope not in SHARED or ctx.pipelined_depth:
        return None
    if dst.dtype.bits != 16 or dst.dtype.is_bool or not whole_region(dst):
        return None
    layout = ctx.layout(frag.buffer, op.span)
    tile = tuple(E.const_value(d) for d in dst.buffer.shape)
    if len(tile) != 2 or layout.padded or any(layout.replica_mask()):
        return None
    count = matrices(layout.linear)
    shared = ctx.shared_layouts.get(id(dst.buffer))
    if count is None or (tile[1] * 2) % ROW_BYTES or not _chunks_kept(shared):
        return None
    if whole_region(frag) and tile == layout.shape:
        return _instructions(op, layout, shared, count, ctx)
    first = _column_block(frag, layout, tile)
    groups = None if first is None else column_groups(layout.linear, count, first, tile[1])
    if not groups:
        return None
    return _instructions(op, layout, shared, count, ctx, (first, groups))


def _column_block(frag: BufferRegion, layout: TileLayout, tile: tuple) -> int | None:
    """The first column of a region of all the fragment's rows and `tile`'s columns, None otherwise."""
    rows, cols = frag.ranges
    first = E.const_value(cols.min)
    whole_rows = E.const_value(rows.min) == 0 and E.const_value(rows.extent) == layout.shape[0] == tile[0]
    if not whole_rows or E.const_value(cols.extent) != tile[1] or not isinstance(first, int):
        return None
    return first


def column_groups(linear: LinearLayout, count: int, first: int, width: int) -> tuple[int, ...] | None:
    """The register groups of `2 * count` (one stmatrix each) that hold columns [first, first + width)
    of the fragment, for every thread alike; None where the block does not split the groups that way: its
    width is a power of two, `first` a multiple of it, and each basis of the layout moves the column
    either within a block (lanes and warps always) or by whole blocks, so that a register's block is
    fixed by its index and a group's registers share one."""
    if width & (width - 1) or first % width:
        return None
    for name in linear.in_names:
        for bit in range(linear.in_bits(name)):
            step = linear.basis(name, bit)["dim1"]
            if step >= width and (name != "register" or step % width):
                return None
    size = 2 * count

    def block(register: int) -> int:
        return linear.apply(register=register, lane=0, warp=0)["dim1"] // width

    groups = []
    for g in range(linear.in_size("register") // size):
        blocks = {block(g * size + k) for k in range(size)}
        if len(blocks) != 1:
            return None
        if blocks == {first // width}:
            groups.append(g)
    return tuple(groups)


def _chunks_kept(shared) -> bool:
    """The tile's layout keeps each aligned 16-byte chunk contiguous (row-major, or a swizzle of chunks)."""
    return shared is None or (
        isinstance(shared, SharedLayout) and (shared.kind != "wgmma" or shared.atom >= 8)
    )


def _instructions(op: S.Copy, layout: TileLayout, shared, count: int, ctx, block=None) -> S.Stmt:
    """An unrolled loop over the thread's register groups, one stmatrix each; `block`: (first column,
    groups) of a column block, looped over where `_group_of` can index them, else written out."""
    regs = ctx.registers_of(op.src.buffer)
    first_column, chosen = block if block is not None else (0, None)
    width = E.const_value(op.dst.buffer.shape[1])

    def one(first: E.Expr) -> S.Stmt:
        # lane l addresses row l % 8 of matrix (l / 8) % count: the element lane 4 (l % 8) holds first, in
        # the matrix's first register (lanes past the instruction's matrices give valid addresses too)
        matrix = E.int_call("bitwise_and", E.int_call("shift_right", ctx.lane, 3), count - 1)
        row_lane = E.mul(E.int_call("bitwise_and", ctx.lane, 7), 4)
        row, col = layout.coords(E.add(first, E.mul(matrix, 2)), row_lane, ctx.warp)
        flat = E.add(E.mul(row, width), E.sub(col, first_column) if first_column else col)
        offset = shared.physical(flat) if isinstance(shared, SharedLayout) else flat
        dtype = op.dst.dtype
        values = tuple(
            E.cast(E.BufferLoad(regs.dtype, regs, (E.add(first, k),)), dtype) for k in range(2 * count)
        )
        return StMatrix(op.dst.buffer, offset, values, count, span=op.span)

    group = ctx.var("m")
    if chosen is None:
        groups, index = layout.num_registers // (2 * count), group
    else:
        groups, index = len(chosen), _group_of(group, chosen)
        if index is None:  # not one index with free bits: each group written out
            return S.seq(*(one(E.const(g * 2 * count)) for g in chosen))
    return S.For(group, E.const(0), E.const(groups), S.ForKind.SERIAL, one(E.mul(index, 2 * count)),
                 (("unroll", True),), span=op.span)  # fmt: skip


def _group_of(i: E.Expr, chosen: tuple[int, ...]) -> E.Expr | None:
    """The i-th of `chosen` register groups as an expression of `i` where they are one group index with
    some bits free (the bits that move within the column block; the wgmma and mma accumulators' blocks
    are), bit k of `i` being the k-th free bit; None otherwise. One loop over them keeps the statement,
    and every later pass's work, the size of the whole-fragment loop's."""
    free = sorted({b for g in chosen for b in range(g.bit_length()) if (g ^ chosen[0]) >> b & 1})
    fixed = chosen[0] & ~sum(1 << b for b in free)
    spanned = sorted(fixed | sum(((k >> j) & 1) << b for j, b in enumerate(free)) for k in range(len(chosen)))
    if spanned != sorted(chosen):
        return None
    out: E.Expr = E.const(fixed)
    for k, bit in enumerate(free):
        out = E.add(out, E.mul(E.int_call("bitwise_and", E.int_call("shift_right", i, k), 1), 1 << bit))
    return out
