"""split-staging-tiles: an epilogue's staging tile that cannot fit beside the pipeline's stages is stored
in blocks of its columns through a narrower tile.

A T.Persistent GEMM stages its epilogue through a shared tile (`T.copy(C_local, C_shared)` then
`T.copy(C_shared, C[...])`) inside its loop over output tiles, which also runs the pipelined main loop.
The staging tile is then live beside the stage tiles (warp-specialized, the producer already loads the
next output tile's stages while the consumers store this one), so the two cannot share bytes: 256x128
float16 tiles with 4 stages of 48 KiB and a 64 KiB staging tile need 256 KiB, past sm_90's 227.

Where the kernel's shared memory, counted as every tile live at once and every pipelined tile in its
num_stages copies, would pass the target's limit, this pass narrows such a staging tile to 1/P of its
columns and repeats the pair of copies once per column block. It prefers two narrow tiles taken in turn
with P >= 4 (the fewest blocks that fit), so that a block's writes overlap the previous block's store,
else one tile with P >= 2; a 256x128 tile with 4 stages becomes

    T.copy(C_local[:, 0:32], C_shared)     # C_shared and C_shared_1 are (256, 32)
    T.copy(C_shared, C[r, c:c + 32])
    T.copy(C_local[:, 32:64], C_shared_1)
    T.copy(C_shared_1, C[r, c + 32:c + 64])
    T.copy(C_local[:, 64:96], C_shared)    # waits for the first block's store only
    ...

Each block is its own TMA store; place-tma-store-waits makes a block wait until the store that last read
its tile has done so (`wait_group.read 1` with two tiles: the other tile's store stays in flight). A pair
qualifies when the staging tile is 2-D, written whole from a whole fragment, stored whole, and used by
nothing else; the narrowed copies are the ones the stmatrix / TMA-store epilogue lowers (stmatrix of a
column block, op/stmatrix.py). A kernel this does not bring under the limit is left as it is
(check-planned-shared-memory then refuses it with its line).
"""

from __future__ import annotations

import dataclasses
import math

from tilecraft import settings
from tilecraft.cuda.storage import SHARED_ALIGN, SHARED_SCOPES
from tilecraft.cuda.transform.check import MBARRIER_BYTES
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.visitor import BufferKeepingMutator, walk
from tilecraft.transform.tile_loops import whole_region

MIN_BLOCK_BYTES = 32  # a column block keeps rows of at least two 16-byte chunks (stmatrix's matrix rows)


def split_staging_tiles(launch: S.KernelLaunch, limit: int) -> S.KernelLaunch:
    """`launch` with its staging tiles narrowed where its estimated shared memory passes `limit` bytes."""
    need = estimated_shared_bytes(launch)
    if need is None or need <= limit:
        return launch
    for pair in sorted(_staging_pairs(launch), key=lambda p: -_bytes(p.tile)):
        split = _blocks_to_fit(pair.tile, need - limit)
        if split is None:
            continue
        blocks, tiles = split
        launch = _Narrow(pair, blocks, tiles).mutate(launch)
        rows, cols = _shape(pair.tile)
        settings.verbose_note(
            pair.load.span,
            f"{pair.tile.name} ({rows}x{cols} {pair.tile.dtype}) is stored in {blocks} column blocks through "
            f"{tiles} tile(s) of {rows}x{cols // blocks}: the kernel's shared memory ({need // 1024} KiB with the "
            f"tile beside the pipeline's stages) would pass the target's {limit // 1024} KiB",
        )
        need -= _bytes(pair.tile) - tiles * _bytes(pair.tile) // blocks
        if need <= limit:
            break
    return launch


def estimated_shared_bytes(launch: S.KernelLaunch) -> int | None:
    """The kernel's shared tiles all live at once, each rounded to the planner's alignment, a tile that a
    T.Pipelined loop copies into counted num_stages times, and the rings' mbarriers; None where a tile's
    size is not constant."""
    stages: dict[int, int] = {}
    total = 0
    for loop in walk(launch.body):
        if isinstance(loop, S.For) and loop.kind is S.ForKind.PIPELINED:
            count = S.annotation(loop.annotations, "num_stages") or 1
            total += 2 * count * MBARRIER_BYTES  # a ring's full and empty barrier per stage
            for op in walk(loop.body):
                if isinstance(op, S.Copy) and op.dst.buffer.scope in SHARED_SCOPES:
                    stages[id(op.dst.buffer)] = max(stages.get(id(op.dst.buffer), 1), count)
    for node in walk(launch.body):
        if isinstance(node, S.Allocate) and node.buffer.scope in SHARED_SCOPES:
            size = _bytes(node.buffer)
            if size is None:
                return None
            total += -(-size // SHARED_ALIGN) * SHARED_ALIGN * stages.get(id(node.buffer), 1)
    return total


@dataclasses.dataclass(frozen=True)
class _Pair:
    load: S.Copy  # fragment -> the staging tile
    store: S.Copy  # the staging tile -> global memory

    @property
    def tile(self) -> Buffer:
        return self.load.dst.buffer


def _staging_pairs(launch: S.KernelLaunch) -> list[_Pair]:
    """Fragment -> tile -> global pairs, one statement after the other, in a loop whose body also runs a
    T.Pipelined loop (so the tile is live beside its stages), the tile used by nothing else."""
    uses: dict[int, int] = {}
    for node in walk(launch.body):
        for buf in _buffers_used(node):
            uses[id(buf)] = uses.get(id(buf), 0) + 1
    pairs = []
    for loop in walk(launch.body):
        if not isinstance(loop, S.For) or loop.kind in (S.ForKind.PIPELINED, S.ForKind.PARALLEL):
            continue
        if not any(isinstance(n, S.For) and n.kind is S.ForKind.PIPELINED for n in walk(loop.body)):
            continue
        for seq in (n for n in walk(loop.body) if isinstance(n, S.SeqStmt)):
            for load, store in zip(seq.stmts, seq.stmts[1:]):
                if _is_pair(load, store) and uses.get(id(load.dst.buffer)) == 2:
                    pairs.append(_Pair(load, store))
    return list({id(p.tile): p for p in pairs}.values())


def _buffers_used(node) -> list[Buffer]:
    """The buffers a tile op or element access names (a staging tile's uses are its two copies)."""
    if isinstance(node, S.Copy):
        return [node.src.buffer, node.dst.buffer]
    if isinstance(node, S.TileOp):
        fields = (getattr(node, f.name) for f in dataclasses.fields(node))
        return [v.buffer for v in fields if isinstance(v, BufferRegion)]
    if isinstance(node, (S.BufferStore, E.BufferLoad)):
        return [node.buffer]
    return []


def _is_pair(load: S.Stmt, store: S.Stmt) -> bool:
    if not (isinstance(load, S.Copy) and isinstance(store, S.Copy)) or load.annotations or store.annotations:
        return False
    tile = load.dst.buffer
    return (
        load.src.buffer.scope == "local.fragment"
        and tile.scope in SHARED_SCOPES
        and len(tile.shape) == 2
        and _bytes(tile) is not None
        and whole_region(load.src)
        and whole_region(load.dst)
        and tuple(E.const_value(d) for d in load.src.buffer.shape) == _shape(tile)
        and store.src.buffer is tile
        and whole_region(store.src)
        and store.dst.buffer.scope == "global"
        and E.const_value(store.dst.ranges[-1].extent) == _shape(tile)[1]
    )


def _blocks_to_fit(tile: Buffer, excess: int) -> tuple[int, int] | None:
    """(column blocks, tiles) saving `excess` bytes, None if no split does: the fewest blocks (a power
    of two) through two tiles used in turn (a block's writes overlap the previous block's store), else
    through one tile."""
    rows, cols = _shape(tile)
    size = _bytes(tile)
    for tiles, blocks in ((2, 4), (1, 2)):
        while cols % blocks == 0 and cols // blocks * tile.dtype.bytes >= MIN_BLOCK_BYTES:
            if size - tiles * size // blocks >= excess:
                return blocks, tiles
            blocks *= 2
    return None


class _Narrow(BufferKeepingMutator):
    """The staging tile as narrow tiles of one column block, its pair of copies once per block, the
    blocks through the tiles in turn."""

    def __init__(self, pair: _Pair, blocks: int, tiles: int) -> None:
        super().__init__()
        self.pair = pair
        self.blocks = blocks
        rows, cols = _shape(pair.tile)
        self.width = cols // blocks
        shape = (E.const(rows), E.const(self.width))
        names = [pair.tile.name] + [f"{pair.tile.name}_{k}" for k in range(1, tiles)]
        self.narrow = [dataclasses.replace(pair.tile, name=name, shape=shape) for name in names]

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        if s.buffer is not self.pair.tile:
            return self.generic_mutate(s)
        body = self.mutate(s.body)
        for tile in reversed(self.narrow):
            body = S.Allocate(tile, body, span=s.span)
        return body

    def mutate_SeqStmt(self, seq: S.SeqStmt) -> S.Stmt:
        out: list[S.Stmt] = []
        for s in seq.stmts:
            if s is self.pair.store:
                continue
            if s is self.pair.load:
                out.extend(self._blocks())
            else:
                out.append(self.mutate(s))
        return S.seq(*out)

    def _blocks(self) -> list[S.Stmt]:
        load, store = self.pair.load, self.pair.store
        out: list[S.Stmt] = []
        for b in range(self.blocks):
            narrow = self.narrow[b % len(self.narrow)]
            tile = BufferRegion(narrow, tuple(Range(E.const(0), d) for d in narrow.shape))
            first = b * self.width
            out.append(dataclasses.replace(load, src=_columns(load.src, first, self.width), dst=tile))
            out.append(dataclasses.replace(store, src=tile, dst=_columns(store.dst, first, self.width)))
        return out


def _columns(region: BufferRegion, first: int, width: int) -> BufferRegion:
    """`region` narrowed to `width` of its last dim's elements from offset `first`."""
    last = region.ranges[-1]
    narrowed = Range(E.add(last.min, first) if first else last.min, E.const(width))
    return dataclasses.replace(region, ranges=(*region.ranges[:-1], narrowed))


def _shape(buf: Buffer) -> tuple:
    return tuple(E.const_value(d) for d in buf.shape)


def _bytes(buf: Buffer) -> int | None:
    dims = _shape(buf)
    if not all(isinstance(d, int) for d in dims):
        return None
    return math.prod(dims) * buf.dtype.bytes
