"""Lifting TileLang's warp-level MMA macros to tile operations.

TileLang's `TensorCoreIntrinEmitter` writes per-thread code: each thread loads its registers of the A
and B operands into small `T.alloc_local` arrays (ldmatrix), issues `mma.sync` on them, and stores its
accumulator registers (stmatrix); together the block's warps compute the block's tile. tilecraft's
kernels are tile-level (a CPU block runs as one thread), so the emitter writes what the warps do
together instead: the operand slices a step reads are copied into block-wide tiles, `mma` is a
`T.gemm` of them into the block's accumulator tile, and `stmatrix` stores that tile.

The per-thread arrays the program allocated stand for those tiles. `LiftState`, one per parsed
function, records which array stands for which tile and, when the function is parsed, rewrites it
(`finish`, a parser finisher): the array's allocation becomes the tile's, `T.clear` / `T.fill` of it
fills the tile, and any other use of the array is an error (its per-thread contents do not exist here).
A serial loop whose body is exactly one A load, one B load and the mma of the two, stepping through
whole shared tiles along K (the example's `for ki in T.serial(block_K // micro_size_k)`), becomes one
`T.gemm` of the shared tiles, which each target lowers to its tensor-core path without the copies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tilecraft.errors import ParseError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.function import PrimFunc
from tilecraft.ir.visitor import BufferKeepingMutator, Mutator, walk
from tilecraft.language import builder as B


@dataclass
class Lifted:
    """A per-thread array of the program and the block tile that stands for it."""

    local: Buffer
    tile: Buffer
    role: str  # "A", "B" or "C"


@dataclass
class Load:
    """An operand load (ldmatrix_a / ldmatrix_b): `tile` = the (rows x k) slice of `source` at step `ki`."""

    tile: Buffer
    source: Buffer
    lead: tuple[E.Expr, ...]  # indices of the dims before the last two
    base: tuple[E.Expr, E.Expr]  # the region's start in the last two dims
    k_offset: E.Expr  # rk * chunk
    ki: E.Expr
    k_step: int
    rows: int
    k_major: bool  # the source's last dim is K


@dataclass
class Mma:
    a: Buffer
    b: Buffer
    c: Buffer


@dataclass
class LiftState:
    """What the emitters did while one function was parsed."""

    lifted: dict[int, Lifted] = field(default_factory=dict)  # by id of the program's array
    loads: dict[int, Load] = field(default_factory=dict)  # by id of the emitted statement
    mmas: dict[int, Mma] = field(default_factory=dict)

    def tile_of(self, local: Buffer) -> Lifted | None:
        return self.lifted.get(id(local))

    def lift(self, local: Buffer, tile: Buffer, role: str) -> Buffer:
        self.lifted[id(local)] = Lifted(local, tile, role)
        return tile

    def finish(self, func: PrimFunc) -> PrimFunc:
        """The parser finisher: fuse the K-step loops, then put the tiles in place of the arrays."""
        body = _FuseSteps(self).mutate(func.body)
        body = _PlaceTiles(self, _buffers_used(body)).mutate(body)
        return dataclasses.replace(func, body=body)

    def statements_using(self, tile: Buffer) -> int:
        """How many emitted statements read or write `tile` (only the emitters' statements can)."""
        loads = sum(load.tile is tile for load in self.loads.values())
        return loads + sum(tile in (m.a, m.b, m.c) for m in self.mmas.values())


def state(builder: B.Builder) -> LiftState:
    """The lift state of the function `builder` parses, registered as its finisher on first use."""
    for finisher in builder.finishers:
        owner = getattr(finisher, "__self__", None)
        if isinstance(owner, LiftState):
            return owner
    new = LiftState()
    builder.finishers.append(new.finish)
    return new


def _buffers_used(node) -> set[int]:
    """Ids of the buffers that statements and expressions under `node` read or write (allocations
    alone do not count)."""
    used: set[int] = set()
    for n in walk(node):
        if isinstance(n, (E.BufferLoad, S.BufferStore, BufferRegion)):
            used.add(id(n.buffer))
    return used


class _FuseSteps(BufferKeepingMutator):
    """`for ki in T.serial(n): load A(ki); load B(ki); mma` over whole shared tiles -> one T.gemm."""

    def __init__(self, lifts: LiftState) -> None:
        super().__init__()
        self.lifts = lifts

    def mutate_For(self, loop: S.For) -> S.Stmt:
        fused = self._fused(loop)
        return fused if fused is not None else self.generic_mutate(loop)

    def _fused(self, loop: S.For) -> S.Stmt | None:
        steps = E.const_value(loop.extent)
        body = loop.body.stmts if isinstance(loop.body, S.SeqStmt) else (loop.body,)
        if loop.kind not in (S.ForKind.SERIAL, S.ForKind.UNROLLED) or E.const_value(loop.min) != 0:
            return None
        if not isinstance(steps, int) or len(body) != 3 or id(body[2]) not in self.lifts.mmas:
            return None
        mma = self.lifts.mmas[id(body[2])]
        loads = [self.lifts.loads.get(id(s)) for s in body[:2]]
        a = next((load for load in loads if load is not None and load.tile is mma.a), None)
        b = next((load for load in loads if load is not None and load.tile is mma.b), None)
        if a is None or b is None or a is b:
            return None
        if not all(E.same_expr(load.ki, loop.loop_var) for load in (a, b)):
            return None
        regions = [_whole_steps(load, steps) for load in (a, b)]
        # the step tiles must not be read elsewhere: there they would hold the last step's slices
        if any(r is None for r in regions) or any(
            self.lifts.statements_using(t) != 2 for t in (mma.a, mma.b)
        ):
            return None
        return S.Gemm(regions[0], regions[1], mma.c.full_region(), transpose_a=not a.k_major,
                      transpose_b=b.k_major, span=body[2].span)  # fmt: skip


def _whole_steps(load: Load, steps: int) -> BufferRegion | None:
    """The region `steps` consecutive loads cover, when it is a whole 2-D tile of the source (its last
    two dims entire, single indices before them); else None."""
    shape = [E.const_value(d) for d in load.source.shape[-2:]]
    k_extent = steps * load.k_step
    k_start = E.add(load.base[1] if load.k_major else load.base[0], load.k_offset)
    row_start = load.base[0] if load.k_major else load.base[1]
    extents = (load.rows, k_extent) if load.k_major else (k_extent, load.rows)
    starts = (row_start, k_start) if load.k_major else (k_start, row_start)
    if any(E.const_value(s) != 0 for s in starts) or list(extents) != shape:
        return None
    ranges = tuple(Range(i, E.const(1)) for i in load.lead) + tuple(
        Range(E.const(0), E.const(n)) for n in extents
    )
    return BufferRegion(load.source, ranges)


class _PlaceTiles(Mutator):
    """The program's per-thread arrays become the tiles that stand for them."""

    def __init__(self, lifts: LiftState, used: set[int]) -> None:
        super().__init__()
        self.lifts = lifts
        self.used = used
        self.span = None

    def mutate(self, node):
        if isinstance(node, S.Stmt) and node.span is not None:
            saved, self.span = self.span, node.span
            try:
                return super().mutate(node)
            finally:
                self.span = saved
        return super().mutate(node)

    def mutate_Allocate(self, alloc: S.Allocate) -> S.Stmt:
        lifted = self.lifts.tile_of(alloc.buffer)
        if lifted is None:
            return self.generic_mutate(alloc)
        body = self.mutate(alloc.body)
        if id(lifted.tile) not in self.used:
            return body  # every use went into a fused gemm
        return dataclasses.replace(alloc, buffer=lifted.tile, body=body)

    def mutate_Fill(self, fill: S.Fill) -> S.Stmt:
        lifted = self.lifts.tile_of(fill.dst.buffer)
        if lifted is None:
            return self.generic_mutate(fill)
        if not _whole(fill.dst):
            raise self._error(lifted, "a part of it is filled")
        return dataclasses.replace(
            fill, dst=lifted.tile.full_region(), value=E.cast(fill.value, lifted.tile.dtype)
        )

    def mutate_Buffer(self, buf: Buffer) -> Buffer:
        lifted = self.lifts.tile_of(buf)
        if lifted is not None:
            raise self._error(lifted, "it is used here")
        return buf

    def _error(self, lifted: Lifted, what: str) -> ParseError:
        return ParseError(
            f"{lifted.local.name} is a per-thread array that TileLang's TensorCoreIntrinEmitter fills "
            f"(its {lifted.role} registers); tilecraft's emitter keeps the block's whole {lifted.role} tile "
            f"{tuple(int(d) for d in lifted.tile.shape)} in it instead, so it can only be passed to the "
            f"emitter's methods and cleared (T.clear / T.fill), but {what}",
            self.span,
            "read the result through mma_emitter.stmatrix(C_local, C_shared) (docs/compat.md, section "
            '"TVM", the intrinsic emitters)',
        )


def _whole(region: BufferRegion) -> bool:
    return all(
        E.const_value(r.min) == 0 and E.const_value(r.extent) == E.const_value(d)
        for r, d in zip(region.ranges, region.buffer.shape)
    )
