"""T.copy on CUDA: the shared SIMT copies, plus 16-byte chunks and vector stores of fragments.

A copy from a fragment to global memory whose layout gives each thread runs of consecutive elements
along the innermost dim (the mma accumulator holds pairs) stores each run in one 4- to 16-byte access.
Copies not touching a fragment are cooperative: the block's threads split the region in 16-byte
chunks where alignment allows (with `cp.async` from global into shared memory inside a pipelined
loop, so the pipeline pass can overlap them), element by element otherwise (the shared SIMT copy),
with edge predicates on global operands either way. T.fill is the shared SIMT fill.

On sm_90a (`tma=True`), a copy from global memory into a wgmma operand tile is a TMA load (`TmaCopy`):
one box per swizzle column block of the tile, through a tensor map whose swizzle span is the tile's
(so the boxes land in the canonical layout wgmma reads) and whose edges read zero; a copy into a 2-D
tile without a layout (rows of at most 256 elements and a multiple of 16 bytes) is one unswizzled box,
and so is a copy into a 1-D tile (one row) where the kernel has room for a producer warpgroup.
A copy that TMA cannot do stays on the 16-byte chunks, with a note under TILECRAFT_VERBOSE.
"""

from __future__ import annotations

from tilecraft import settings
from tilecraft.cuda.ir import AsyncCopy, TmaCopy, TmaLoad, VectorCopy, VectorLoad, VectorStore, VectorZero
from tilecraft.cuda.op.stmatrix import stmatrix_copy
from tilecraft.cuda.op.tma_store import TMA_MAX_BOX, tensor_map_refusal, tma_box, tma_coords, tma_store_copy
from tilecraft.cuda.shared_layout import SharedLayout, swizzle16
from tilecraft.cuda.storage import BUFFER_ALIGN, WGMMA_ALIGN
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import Analyzer
from tilecraft.ir.buffer import BufferRegion
from tilecraft.layout.fragment import fragment_dims
from tilecraft.layout.linear import LinearLayout, log2
from tilecraft.layout.tile import TileLayout
from tilecraft.transform.simt.copy import element_copy, fragment_copy, fragment_side, lower_fill
from tilecraft.transform.tile_loops import conjunction, edge_conditions, loop_extents, region_index

__all__ = ["lower_copy", "lower_fill"]

CHUNK = BUFFER_ALIGN  # a 16-byte vector: as wide as buffer arguments are aligned
TMA_SHARED_ALIGN = 128  # a TMA box's shared destination (PTX: cp.async.bulk.tensor)
SWIZZLE_128B = 128


def lower_copy(
    op: S.Copy,
    ctx,
    tma: bool = False,
    tma_store: bool = False,
    stmatrix: bool = False,
    unsuited: frozenset[int] = frozenset(),
    tma_slices: bool = False,
) -> S.Stmt:
    """`tma` allows TMA loads into wgmma operand tiles (sm_90a without tl.disable_tma_lower), `tma_slices`
    TMA loads into 1-D tiles too (where the kernel has room for a producer warpgroup), `tma_store`
    TMA stores of shared tiles (op/tma_store.py), `stmatrix` fragment -> shared copies through stmatrix
    (op/stmatrix.py); `unsuited`: the ids of copies neither may take (tma_store.unsuited_copies)."""
    if tma:
        loads = _tma_copy(op, ctx, tma_slices)
        if loads is not None:
            return loads
    if tma_store:
        stores = tma_store_copy(op, ctx, unsuited)
        if stores is not None:
            return stores
    frag = fragment_side(op)
    if frag is not None:
        matrices = stmatrix_copy(op, frag, ctx) if stmatrix and id(op) not in unsuited else None
        if matrices is not None:
            return matrices
        runs = _vector_fragment_store(op, frag, ctx)
        if runs is None:
            runs = _vector_fragment_load(op, frag, ctx)
        return runs if runs is not None else fragment_copy(op, frag, ctx)
    vector = _vector_plan(op, ctx)
    if vector is not None:
        return vector
    return element_copy(op, ctx)


# ---------------------------------------------------------------- TMA (sm_90a)


def _tma_copy(op: S.Copy, ctx, slices: bool) -> S.Stmt | None:
    """The copy as TMA boxes into a wgmma operand tile or a row-major 2-D tile, or None (not such a copy,
    or TMA cannot do it)."""
    src, dst = op.src, op.dst
    layout = ctx.shared_layouts.get(id(dst.buffer))
    if src.buffer.scope != "global" or dst.buffer.scope not in SHARED:
        return None
    if layout is None:
        if len(dst.buffer.shape) == 1 and not slices:
            settings.verbose_note(op.span, f"T.copy into 1-D tile {dst.buffer.name} stays on cp.async (no TMA): "
                                  "the kernel's per-thread arrays leave no room for a producer warpgroup")
            return None
        return _tma_row_major(op)
    if isinstance(layout, SharedLayout) and layout.kind == "swizzle16":
        return _tma_swizzle16(op, layout)
    if not isinstance(layout, SharedLayout) or layout.kind != "wgmma":
        return None
    reason = _tma_refusal(op, layout)
    if reason is not None:
        _note(op, reason)
        return None
    box = tma_box(src, layout.rows, layout.atom)
    loads = []
    for block in range(layout.row_length // layout.atom):
        coords = tma_coords(src, block * layout.atom)
        offset = E.const(block * layout.rows * layout.atom)
        loads.append(TmaLoad(dst.buffer, offset, src.buffer, box, layout.swizzle_bytes, coords, span=op.span))
    nbytes = layout.rows * layout.row_length * dst.dtype.bytes
    return TmaCopy(tuple(loads), nbytes, span=op.span)


def _tma_row_major(op: S.Copy) -> S.Stmt | None:
    """A 1-D or 2-D tile without a layout (a packed weight tile a dequantization reads, a flash-attention
    backward's slice of lse: not gemm operands) as one box of whole rows through an unswizzled map (a
    1-D tile is one row), as TileLang loads every tile of a Hopper pipeline: so a loop of such tiles and
    wgmma tiles is all TMA and may get a producer warpgroup. A 1-D slice (a few hundred bytes) gains
    nothing from TMA but that producer, so it takes TMA only where the kernel's arrays leave room for
    one (`lower_copy`'s `tma_slices`); elsewhere it stays on cp.async, which needs no barrier ring."""
    src, dst = op.src, op.dst
    if len(dst.buffer.shape) not in (1, 2) or src.dtype != dst.dtype or dst.dtype.bits not in (8, 16, 32):
        return None
    if dst.dtype.is_bool:
        return None  # no tensor-map data type
    rows, cols = (E.const_value(d) for d in (E.const(1), *dst.buffer.shape)[-2:])
    if not isinstance(rows, int) or not isinstance(cols, int):
        return None
    reason = _row_refusal(rows, cols, dst.dtype) or tensor_map_refusal(op, src, dst, rows, "taken from")
    if reason is not None:
        settings.verbose_note(op.span, f"T.copy into shared tile {dst.buffer.name} stays on cp.async (no TMA): {reason}")
        return None
    load = TmaLoad(dst.buffer, E.const(0), src.buffer, tma_box(src, rows, cols), 0, tma_coords(src, 0), span=op.span)
    return TmaCopy((load,), rows * cols * dst.dtype.bytes, span=op.span)


def _tma_swizzle16(op: S.Copy, layout: SharedLayout) -> S.Stmt | None:
    """An mma.sync operand tile whose rows are 128 bytes (64 16-bit or 128 8-bit elements: `swizzle16`
    then XORs each row's 16-byte chunk index with the row mod 8, which is TMA's 128-byte swizzle of the
    absolute address on a 1024-byte aligned tile) as one box of whole rows through a 128-byte swizzled
    map: so the loop of an int8 gemm (TileLang's w4a8) is all TMA too."""
    src, dst = op.src, op.dst
    if len(dst.buffer.shape) != 2 or src.dtype != dst.dtype or dst.dtype.bits not in (8, 16):
        return None
    rows, cols = (E.const_value(d) for d in dst.buffer.shape)
    if not isinstance(rows, int) or cols * dst.dtype.bytes != SWIZZLE_128B or layout != swizzle16(cols, dst.dtype.bytes):
        return None
    if (rows * SWIZZLE_128B) % WGMMA_ALIGN:
        return None  # a stage must start where the swizzle pattern does
    reason = tensor_map_refusal(op, src, dst, rows, "taken from")
    if reason is not None:
        _note(op, reason)
        return None
    box = tma_box(src, rows, cols)
    load = TmaLoad(dst.buffer, E.const(0), src.buffer, box, SWIZZLE_128B, tma_coords(src, 0), span=op.span)
    return TmaCopy((load,), rows * SWIZZLE_128B, span=op.span)


def _row_refusal(rows: int, cols: int, dtype: dt.DataType) -> str | None:
    if cols > TMA_MAX_BOX or (cols * dtype.bytes) % CHUNK:
        return f"rows of {cols} elements are not one box (at most {TMA_MAX_BOX}, a multiple of 16 bytes)"
    if (rows * cols * dtype.bytes) % TMA_SHARED_ALIGN:
        # a box lands on 128 bytes; the pipeline's stages follow each other at the tile's size
        return f"the tile's {rows * cols * dtype.bytes} bytes are not a multiple of {TMA_SHARED_ALIGN}"
    return None


def _tma_refusal(op: S.Copy, layout: SharedLayout) -> str | None:
    """Why TMA cannot do this copy into a wgmma tile (None: it can)."""
    src, dst = op.src, op.dst
    if src.dtype != dst.dtype or dst.dtype.bits not in (8, 16):
        return f"a {src.dtype} -> {dst.dtype} copy (TMA moves 16-bit and float8 tiles unconverted here)"
    return tensor_map_refusal(op, src, dst, layout.rows, "taken from")


def _note(op: S.Copy, reason: str) -> None:
    settings.verbose_note(op.span, f"T.copy into a wgmma tile stays on cp.async (no TMA): {reason}")


# ---------------------------------------------------------------- fragment runs to and from global memory


def _fragment_runs(op: S.Copy, frag: BufferRegion, glob: BufferRegion, elem: dt.DataType, ctx,
                   min_bytes: int = 4):  # fmt: skip
    """(layout, kept dims, run) where the whole fragment `frag` moves to or from the global region `glob`
    in runs: each thread's registers from every multiple of `run` hold `run` consecutive elements of the
    innermost dim, which lie at consecutive addresses of `glob` (elements of `elem`, 8, 16 or 32 bits)
    whose start is a multiple of `run` in every row, so that a run is one aligned 4-, 8- or 16-byte
    access (buffer arguments start on BUFFER_ALIGN bytes, which the launchers check). The row length
    is then a multiple of `run` too, so no run crosses the buffer's edge: each lies wholly inside or
    wholly past it. None where the fragment is not moved whole, or runs are too short or not provably
    aligned."""
    if glob.buffer.scope != "global" or elem.bits not in (8, 16, 32) or elem.is_bool:
        return None
    layout = ctx.layout(frag.buffer, op.span)
    if layout.padded or not _whole(frag, layout):
        return None
    kept = [k for k, s in enumerate(layout.shape) if s != 1] or [len(layout.shape) - 1]
    extents = [E.const_value(e) for e in loop_extents(glob)]
    if extents != [layout.shape[k] for k in kept] or not _contiguous_inner(glob):
        return None
    run = _register_run(layout, kept[-1], CHUNK // elem.bytes)
    ana = Analyzer()
    # the widest access whose alignment the region and the buffer's row length prove
    while run >= 2 and run * elem.bytes >= min_bytes and not _row_strides_aligned(glob, run, ana):
        run //= 2
    if run < 2 or run * elem.bytes < min_bytes:
        return None
    return layout, kept, run


def _run_indices(glob: BufferRegion, layout: TileLayout, kept: list[int], run: int, ctx):
    """(iteration var, first register of the run, the global indices of the run's elements)."""
    it = ctx.var("v")
    first = E.mul(it, run)
    # the layout of the runs' first elements (register `it` of it is register it * run of the fragment),
    # so that the index arithmetic has no register bits that are known to be zero
    bits = log2(run)
    bases = [(name, vs[bits:] if name == "register" else vs) for name, vs in layout.linear.bases]
    starts = TileLayout(layout.shape, LinearLayout(bases, layout.linear.out_dims))
    coords = starts.coords(it, ctx.lane, ctx.warp)
    start = region_index(glob, [coords[k] for k in kept])
    indices = [start] + [start[:-1] + (E.add(start[-1], j),) for j in range(1, run)]
    return it, first, indices


def _run_loop(it: E.Var, layout: TileLayout, run: int, body: S.Stmt, span) -> S.Stmt:
    count = layout.num_registers // run
    return S.For(it, E.const(0), E.const(count), S.ForKind.SERIAL, body, (("unroll", True),), span=span)


def _vector_fragment_store(op: S.Copy, frag: BufferRegion, ctx) -> S.Stmt | None:
    """The fragment's registers stored run by run, or None where the shared element copy must do."""
    dst = op.dst
    dtype = dst.dtype
    if frag is not op.src:
        return None
    # pairs of 8-bit elements (a wgmma accumulator's column pairs cast to float8) go out as 2 bytes
    plan = _fragment_runs(op, frag, dst, dtype, ctx, min_bytes=2)
    if plan is None or any(ctx.layout(frag.buffer, op.span).replica_mask()):
        return None
    layout, kept, run = plan
    regs = ctx.registers_of(frag.buffer)
    it, first, indices = _run_indices(dst, layout, kept, run, ctx)
    values = tuple(
        E.cast(E.BufferLoad(frag.buffer.dtype, regs, (E.add(first, j),)), dtype) for j in range(run)
    )
    body: S.Stmt = VectorStore(dst.buffer, _flat_offset(dst, indices[0]), values, span=op.span)
    # A run lies wholly inside or wholly past the edge (`_fragment_runs`): a run past it is skipped.
    guard = conjunction(edge_conditions(dst, indices[-1]))
    if guard is not None:
        body = S.IfThenElse(guard, body, span=op.span)
    return _run_loop(it, layout, run, body, op.span)


def _vector_fragment_load(op: S.Copy, frag: BufferRegion, ctx) -> S.Stmt | None:
    """The fragment's registers loaded from global memory run by run (each run one aligned access,
    converted element by element to the fragment's dtype), or None where the element copy must do.
    A run past the edge of the source reads zeros (it lies wholly past it: `_fragment_runs`)."""
    src = op.src
    if frag is not op.dst:
        return None
    plan = _fragment_runs(op, frag, src, src.dtype, ctx)
    if plan is None:
        return None
    layout, kept, run = plan
    regs = ctx.registers_of(frag.buffer)
    it, first, indices = _run_indices(src, layout, kept, run, ctx)
    body: S.Stmt = VectorLoad(regs, first, src.buffer, _flat_offset(src, indices[0]), run, span=op.span)
    guard = conjunction(edge_conditions(src, indices[-1]))
    if guard is not None:  # a run past the edge reads zeros
        zero = E.const(0, frag.buffer.dtype)
        zeros = [S.BufferStore(regs, zero, (E.add(first, j),), span=op.span) for j in range(run)]
        body = S.IfThenElse(guard, body, S.SeqStmt(tuple(zeros)), span=op.span)
    return _run_loop(it, layout, run, body, op.span)


def _whole(frag: BufferRegion, layout: TileLayout) -> bool:
    return all(
        E.const_value(r.min) == 0 and E.const_value(r.extent) == s for r, s in zip(frag.ranges, layout.shape)
    )


def _register_run(layout: TileLayout, dim: int, limit: int) -> int:
    """How many consecutive registers (from every multiple of the result) hold consecutive elements
    of `dim`, at most `limit`; 1 when another input bit of the layout moves `dim` by less than a run,
    so that runs would not start on a multiple of their length."""
    linear = layout.linear
    name = fragment_dims(len(layout.shape))[dim]
    run, bits = 1, 0
    while run * 2 <= limit and bits < linear.in_bits("register"):
        expected = {out: (1 << bits if out == name else 0) for out in linear.out_names}
        if linear.basis("register", bits) != expected:
            break
        run, bits = run * 2, bits + 1
    for in_name in linear.in_names:
        for b in range(linear.in_bits(in_name)):
            if (in_name != "register" or b >= bits) and linear.basis(in_name, b)[name] & (run - 1):
                return 1
    return run


# ---------------------------------------------------------------- 16-byte chunks


def _contiguous_inner(region: BufferRegion) -> bool:
    """The region's innermost non-unit dim is the buffer's last dim and the buffer is row-major."""
    if region.buffer.strides:
        return False
    ranges = region.ranges
    inner = max((k for k, r in enumerate(ranges) if E.const_value(r.extent) != 1), default=None)
    return inner == len(ranges) - 1


def _row_strides_aligned(region: BufferRegion, elems: int, ana: Analyzer) -> bool:
    """Every row of the region starts on a `elems`-element boundary (so each chunk is 16-byte aligned)."""
    buf = region.buffer
    last = region.ranges[-1]
    if not ana.can_prove(E.compare(E.EQ, E.floormod(last.min, elems), 0)):
        return False
    row = buf.shape[-1]
    return ana.can_prove(E.compare(E.EQ, E.floormod(row, elems), 0))


def _vector_plan(op: S.Copy, ctx) -> S.Stmt | None:
    dtype = op.src.dtype
    if dtype != op.dst.dtype or dtype.bytes > CHUNK or dtype.is_packed:
        return None  # packed 4-bit data: two elements a byte in global memory, one on chip
    elems = CHUNK // dtype.bytes
    extents = [E.const_value(e) for e in loop_extents(op.dst if op.dst.buffer.scope != "global" else op.src)]
    if not extents or not all(isinstance(v, int) for v in extents) or extents[-1] % elems:
        return None
    ana = Analyzer()
    for r in (op.src, op.dst):
        if not _contiguous_inner(r) or not _row_strides_aligned(r, elems, ana):
            return None
    total = 1
    for v in extents:
        total *= v
    chunks = total // elems
    use_async = ctx.pipelined_depth > 0 and op.src.buffer.scope == "global" and op.dst.buffer.scope in SHARED
    return _chunk_loop(op, ctx, extents, elems, chunks, use_async)


def _chunk_loop(op: S.Copy, ctx, extents: list[int], elems: int, chunks: int, use_async: bool) -> S.Stmt:
    it = ctx.var("c")
    chunk = E.add(E.mul(it, ctx.threads), ctx.tid)
    flat = E.mul(chunk, elems)
    coords, rest = [], flat
    for k in range(len(extents)):
        inner = 1
        for e in extents[k + 1 :]:
            inner *= e
        coords.append(E.floordiv(rest, inner) if inner > 1 else rest)
        rest = E.floormod(rest, inner) if inner > 1 else rest
    src_idx = region_index(op.src, coords)
    dst_idx = region_index(op.dst, coords)
    valid = conjunction(_edge(op.src, src_idx) + _edge(op.dst, dst_idx))
    if valid is None:
        valid = E.const(True)
    src_off = _src_offset(op.src, src_idx, ctx)
    dst_off = _dst_offset(op.dst, dst_idx, ctx)
    if use_async:
        body: S.Stmt = AsyncCopy(op.dst.buffer, dst_off, op.src.buffer, src_off, CHUNK, valid, span=op.span)
    else:
        body = VectorCopy(op.dst.buffer, dst_off, op.src.buffer, src_off, CHUNK, span=op.span)
        if not isinstance(valid, E.IntImm):
            # past a global edge: stores are skipped, loads give zeros
            zeros = None if op.dst.buffer.scope == "global" else _zero_chunk(op, dst_off, elems)
            body = S.IfThenElse(valid, body, zeros, span=op.span)
    iterations = -(-chunks // ctx.threads)
    if chunks % ctx.threads:
        body = S.IfThenElse(E.compare(E.LT, chunk, chunks), body, span=op.span)
    return S.For(
        it, E.const(0), E.const(iterations), S.ForKind.SERIAL, body, (("unroll", True),), span=op.span
    )


def _edge(region: BufferRegion, indices) -> list:
    return edge_conditions(region, indices)


def _flat_offset(region: BufferRegion, indices) -> E.Expr:
    """Row-major element offset of `indices` in the region's buffer."""
    offset: E.Expr = E.const(0, "int64")
    stride: E.Expr = E.const(1, "int64")
    for idx, dim in reversed(list(zip(indices, region.buffer.shape))):
        offset = E.add(offset, E.mul(E.cast(idx, "int64"), stride))
        stride = E.mul(stride, E.cast(dim, "int64"))
    return offset


def _src_offset(region: BufferRegion, indices, ctx) -> E.Expr:
    """A source's element offset: physical in a swizzled shared tile (the staging tile of a TMA store
    read by a copy that could not be one; a 16-byte chunk stays contiguous), row-major elsewhere.
    apply-shared-layouts leaves the offsets of vector copies as they are."""
    layout = ctx.shared_layouts.get(id(region.buffer))
    if region.buffer.scope in SHARED and isinstance(layout, SharedLayout):
        return layout.physical(E.cast(_flat_offset(region, indices), "int32"))
    return _flat_offset(region, indices)


def _dst_offset(region: BufferRegion, indices, ctx) -> E.Expr:
    layout = ctx.shared_layouts.get(id(region.buffer))
    if region.buffer.scope in SHARED:
        flat = _flat_offset(region, indices)
        flat = E.cast(flat, "int32")
        return layout.physical(flat) if isinstance(layout, SharedLayout) else flat
    return _flat_offset(region, indices)


def _zero_chunk(op: S.Copy, dst_off: E.Expr, elems: int) -> S.Stmt:
    return VectorZero(op.dst.buffer, dst_off, CHUNK, span=op.span)
