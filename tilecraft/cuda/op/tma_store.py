"""T.copy of a shared tile to global memory as a TMA store (sm_90a), and the staging layout it gets.

TileLang kernels stage their output through a shared tile: `T.copy(C_local, C_shared)` then
`T.copy(C_shared, C[by * bm, bx * bn])`. Where the second copy fits a tensor map (the rules of
`store_refusal`, those of the TMA loads in copy.py), it becomes `TmaStoreCopy`: one elected thread
issues one `cp.async.bulk.tensor` box per swizzle column block of the tile and commits them as a bulk
async-group. The hardware clips each box at the tensor's edges (elements past them are not written),
so ragged sizes need no predicate.

The tile's layout is what the tensor map's swizzle describes: a tile that is the source of such a store
and no gemm's operand gets the canonical swizzled layout of wgmma operand tiles with the widest swizzle
that divides its rows, 128 bytes for the rows of GEMM and attention tiles (column blocks of 128 bytes,
16-byte chunks XOR-ed with the row within each 8-row group; `staging_layout`). Rows of
256 to 512 bytes would otherwise put the 8 rows an mma accumulator fragment writes at once (8 rows x 4
lanes of a warp, or the 8 row addresses of one stmatrix matrix) on the same 4 banks: an 8-way conflict
that the swizzle turns into none. A tile without a layout (no swizzle fits its rows) is stored through a
SWIZZLE_NONE map when its row is one box; gemm operand tiles keep their own canonical layout, which a map
of their swizzle reads as it was written.

`tl.disable_tma_lower` switches the stores off with the loads; the pass config `TMA_STORE` switches off
only this epilogue (TMA stores, staging layouts and stmatrix), so the two can be compared on a GPU.
"""

from __future__ import annotations

from collections.abc import Iterator

from tilecraft import settings
from tilecraft.cuda.ir import TmaStore, TmaStoreCopy
from tilecraft.cuda.shared_layout import SharedLayout, wgmma_atom, wgmma_operand
from tilecraft.cuda.storage import BUFFER_ALIGN
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith import Analyzer
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.visitor import children, free_vars, walk
from tilecraft.transform.tile_loops import whole_region

TMA_STORE = "tilecraft.cuda.tma_store"
TMA_STORE_DOC = (
    "on sm_90a (where TMA loads are on), store a shared tile to global memory with a TMA store, give such "
    "staging tiles the 128-byte swizzled layout and write 16-bit mma/wgmma accumulators into shared tiles "
    "with stmatrix (default True; False keeps today's epilogue, for comparing the two)"
)
TMA_MAX_RANK = 5
TMA_MAX_BOX = 256
# TMA element types (cuTensorMapEncodeTiled's CUtensorMapDataType, execution/cuda_driver/tensor_map.py);
# 8- and 16-bit integers move as the unsigned types of their size, unconverted.
STORABLE = ("float16", "bfloat16", "float32", "int32", "uint32", "int16", "uint16", "int8", "uint8",
            "float8_e4m3fn", "float8_e5m2")  # fmt: skip


def tma_store_enabled(pass_configs) -> bool:
    """The epilogue of this module is on (the pass config TMA_STORE, default True)."""
    return bool(pass_configs.get(TMA_STORE, True))


# ---------------------------------------------------------------- which copies


def store_refusal(op: S.Copy) -> str | None:
    """Why a shared -> global copy cannot be a TMA store whatever the tile's layout (None: it can)."""
    src, dst = op.src, op.dst
    if src.dtype != dst.dtype or dst.dtype.name not in STORABLE:
        return f"a {src.dtype} -> {dst.dtype} copy (TMA stores 8-, 16- and 32-bit tiles unconverted here)"
    rows = E.const_value(src.buffer.shape[0]) if len(src.buffer.shape) == 2 else 0
    return tensor_map_refusal(op, dst, src, rows, "stored into")


def tensor_map_refusal(op: S.Copy, tensor: BufferRegion, tile: BufferRegion, rows: int, how: str) -> str | None:
    """Why `tensor`'s region and the whole 2-D shared `tile` cannot be the two sides of TMA boxes through a
    tensor map of `tensor` (None: they can): the rules TMA loads and stores share. The map has the
    tensor's full rank; the region's extents must be 1 in every dim but two, the tile's rows in any dim
    and its columns in the last (`rows_dim`: TileLang's bshd attention reads `K[b, rows, h, :]`), so the
    box lands as the tile. `how`: "taken from" or "stored into" (the tile and the tensor), for the
    message."""
    if S.annotation(op.annotations, "disable_tma"):
        return "T.copy(..., disable_tma=True)"
    buf = tensor.buffer
    if buf.strides:
        return f"{buf.name} has explicit strides"
    if buf.base is not None and (buf.base.base is not None or buf.base.strides):
        return f"{buf.name} is a view of {buf.base.name}, which is not a dense parameter"
    # A view's map is its base parameter's memory with the view's row-major dims (codegen records them).
    rank = len(buf.shape)
    if not 2 <= rank <= TMA_MAX_RANK:
        return f"{buf.name} has {rank} dims (TMA: 2 to {TMA_MAX_RANK} here)"
    extents = [E.const_value(r.extent) for r in tensor.ranges]
    if not all(isinstance(e, int) for e in extents):
        return "the region's extents are not constants"
    shape = [E.const_value(d) for d in tile.buffer.shape]
    if len(shape) == 1 and rows == 1:
        shape = [1, *shape]  # a 1-D tile is one row of a box (a load's slice of a row-major tensor)
    if len(shape) != 2 or not whole_region(tile):
        return f"the region is not a whole 2-D tile {how} the tensor ({tile.buffer.name} is not used whole as 2-D)"
    if rows_dim(tensor, shape[0]) is None or extents[-1] != shape[1]:
        return (
            f"the region's extents {tuple(extents)} are not a {shape[0]} x {shape[1]} tile {how} the tensor "
            "(TMA here: the rows in one dim, the columns in the last, 1 in every other dim)"
        )
    if rows > TMA_MAX_BOX:
        return f"the tile has {rows} rows (a TMA box has at most {TMA_MAX_BOX})"
    elems = BUFFER_ALIGN // buf.dtype.bytes
    if not Analyzer().can_prove(E.compare(E.EQ, E.floormod(buf.shape[-1], elems), 0)):
        return f"rows of {buf.name} are not provably a multiple of 16 bytes (TMA's stride rule)"
    return None


def rows_dim(tensor: BufferRegion, rows: int) -> int | None:
    """The dim of `tensor`'s region that holds a tile's `rows`: the one dim before the last whose extent
    is not 1 when it is `rows`, the second-to-last when every such extent is 1 (a one-row tile); None when
    the extents of the dims before the last are not `rows` in one dim and 1 in the others."""
    extents = [E.const_value(r.extent) for r in tensor.ranges[:-1]]
    wide = [k for k, e in enumerate(extents) if e != 1]
    if not wide:
        return len(extents) - 1 if rows == 1 and extents else None
    return wide[0] if len(wide) == 1 and extents[wide[0]] == rows else None


def tma_box(tensor: BufferRegion, rows: int, columns: int) -> tuple[int, ...]:
    """The box of `rows` x `columns` (a swizzle column block) of the tile in `tensor`'s region, innermost
    dim first as the driver takes it: `columns` in the last dim, `rows` in `rows_dim`, 1 elsewhere."""
    rank = len(tensor.ranges)
    box = [1] * rank
    box[0] = columns
    box[rank - 1 - rows_dim(tensor, rows)] = rows
    return tuple(box)


def tma_coords(tensor: BufferRegion, column: int) -> tuple[E.Expr, ...]:
    """The box's start in every dim of `tensor`, innermost first: the region's starts, the last dim's
    moved on by `column` (the swizzle column block's first element)."""
    mins = [r.min for r in tensor.ranges]
    return (E.add(mins[-1], column), *reversed(mins[:-1]))


def layout_refusal(tile: Buffer, layout) -> str | None:
    """Why the tile's layout is not one a tensor map's box can read (None: it is)."""
    rows, cols = (E.const_value(d) for d in tile.shape)
    if isinstance(layout, SharedLayout) and layout.kind == "wgmma":
        if (layout.rows, layout.row_length) != (rows, cols):
            return f"the tile's layout is that of a {layout.rows} x {layout.row_length} tile"
        return None
    if layout is not None:
        return f"the tile's layout {layout} is not one a TMA box lands in"
    if cols > TMA_MAX_BOX or (cols * tile.dtype.bytes) % BUFFER_ALIGN:
        return f"a row-major tile's rows of {cols} elements are not one box (<= 256, a multiple of 16 bytes)"
    return None


def is_store_candidate(op: S.Stmt) -> bool:
    """A T.copy from a shared tile to global memory: what this module may turn into a TMA store."""
    return isinstance(op, S.Copy) and op.src.buffer.scope in SHARED and op.dst.buffer.scope == "global"


# ---------------------------------------------------------------- where copies stand


def unsuited_copies(body: S.Stmt) -> frozenset[int]:
    """The ids of the T.copy statements in the kernels of `body` that the epilogue must leave alone:
    those in a branch or loop whose condition may differ between threads (it reads the thread index or a
    thread's own registers: a TMA store is issued by thread 0, stmatrix needs every lane of a warp), and
    those in a T.Pipelined loop (its stages and schedules know only their own statements)."""
    found: set[int] = set()
    for launch in (n for n in walk(body) if isinstance(n, S.KernelLaunch)):
        _mark(launch.body, {id(v) for v in launch.thread_vars}, False, found)
    return frozenset(found)


def _mark(s: S.Stmt, threads: set[int], unsuited: bool, found: set[int]) -> None:
    if isinstance(s, S.Copy):
        if unsuited:
            found.add(id(s))
        return
    if isinstance(s, S.LetStmt) and _per_thread(s.value, threads):
        threads = threads | {id(s.var)}  # a value bound from the thread index is thread-dependent too
    if isinstance(s, (S.IfThenElse, S.While)) and _per_thread(s.condition, threads):
        unsuited = True
    if isinstance(s, S.For) and (s.kind is S.ForKind.PIPELINED or _per_thread((s.min, s.extent), threads)):
        unsuited = True
    for child in _stmt_children(s):
        _mark(child, threads, unsuited, found)


def _per_thread(e, threads: set[int]) -> bool:
    """`e` may take different values in different threads of a block."""
    if any(id(v) in threads for v in free_vars(e)):
        return True
    return any(isinstance(n, E.BufferLoad) and n.buffer.scope.startswith("local") for n in walk(e))


def _stmt_children(s: S.Stmt) -> Iterator[S.Stmt]:
    for value in children(s):
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, S.Stmt):
                yield item


# ---------------------------------------------------------------- the staging layout


def staging_layout(op: S.Copy) -> SharedLayout | None:
    """The swizzled layout for the source tile of a copy that can be a TMA store, with the widest swizzle
    (128, 64 or 32 bytes) that divides its rows (None: the copy cannot be a TMA store, or no swizzle
    divides the rows, or their count is not a multiple of 8)."""
    if not is_store_candidate(op) or store_refusal(op) is not None:
        return None
    rows, cols = (E.const_value(d) for d in op.src.buffer.shape)
    size = op.src.dtype.bytes
    atom = wgmma_atom(cols, size) if (cols * size) % 32 == 0 else None
    if atom is None or rows % 8:
        return None
    return wgmma_operand(rows, cols, atom, size)


def staging_layouts(body: S.Stmt):
    """`strict(op, threads, target)` additions for a function body: the staging layout of each tile that
    a suitable copy stores to global memory and that no gemm reads (gemm operands keep their layout)."""
    unsuited = unsuited_copies(body)
    operands = gemm_operands(body)

    def layouts(op: S.Stmt, threads: int, target) -> Iterator[tuple[Buffer, SharedLayout, str]]:
        if not is_store_candidate(op) or id(op) in unsuited or id(op.src.buffer) in operands:
            return
        layout = staging_layout(op)
        if layout is not None:
            yield op.src.buffer, layout, "the source of a TMA store"

    return layouts


def gemm_operands(body: S.Stmt) -> set[int]:
    """The ids of the shared tiles some T.gemm of `body` reads (they keep the gemm's layout)."""
    return {id(r.buffer) for op in walk(body) if isinstance(op, S.Gemm) for r in (op.a, op.b)}


# ---------------------------------------------------------------- the lowering


def tma_store_copy(op: S.Copy, ctx, unsuited: set[int]) -> S.Stmt | None:
    """The copy as TMA stores, or None (not a shared -> global copy, or TMA cannot do it: noted)."""
    if not is_store_candidate(op):
        return None
    tile = op.src.buffer
    layout = ctx.shared_layouts.get(id(tile))
    reason = store_refusal(op) or layout_refusal(tile, layout)
    if reason is None and (id(op) in unsuited or ctx.pipelined_depth):
        reason = "the copy is in a T.Pipelined loop or under a condition on the thread index"
    if reason is not None:
        note(op, reason)
        return None
    return TmaStoreCopy(_boxes(op, layout), span=op.span)


def _boxes(op: S.Copy, layout: SharedLayout | None) -> tuple[TmaStore, ...]:
    """One box per swizzle column block of the tile (one box of whole rows for a row-major tile)."""
    src, dst = op.src, op.dst
    rows, cols = (E.const_value(d) for d in src.buffer.shape)
    atom = layout.atom if layout is not None else cols
    swizzle = layout.swizzle_bytes if layout is not None else 0
    box = tma_box(dst, rows, atom)
    stores = []
    for block in range(cols // atom):
        coords = tma_coords(dst, block * atom)
        offset = E.const(block * rows * atom)
        stores.append(TmaStore(dst.buffer, src.buffer, offset, box, swizzle, coords, span=op.span))
    return tuple(stores)


def note(op: S.Copy, reason: str) -> None:
    settings.verbose_note(op.span, f"T.copy to global memory is not a TMA store: {reason}")
