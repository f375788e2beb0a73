"""sink-tma-waits: a TMA load outside a pipeline is waited for where its tile is first used, not where
it is issued.

A `TmaCopy` on ring 0 (the synchronous barrier) makes every thread wait for the tile right after the
issue. When the statements after it do not touch the tile (a flash-decoding kernel clears its
accumulators and issues the first K and V tiles of its pipeline before its loop reads Q), the wait can
move down to the first statement that does, so those loads are in flight together instead of one
after the other. The copy gets a barrier of its own (a ring of one stage), and its wait goes right
before the first statement naming the tile, descending into allocations, lets and sequences on the
way (never into a loop or a branch, so every thread that issued waits once). Kernels with a producer
warpgroup are left as they are: their consumers' code is split off later (warp_specialize.py).
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import MbarRing, MbarWait, ProducerLoop, TmaCopy
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, walk


def _rings_in(launch: S.KernelLaunch) -> int:
    """The highest ring number the kernel uses (0: only the synchronous one)."""
    used = [n.ring for n in walk(launch.body) if isinstance(n, (MbarRing, MbarWait, TmaCopy))]
    return max(used, default=0)


def _names(s: S.Stmt, tiles: set[int]) -> bool:
    """`s` names one of the tiles (or a view of one) anywhere."""
    return any(
        isinstance(n, Buffer) and (id(n) in tiles or (n.base is not None and id(n.base) in tiles))
        for n in walk(s)
    )


def _sink(stmts: list[S.Stmt], tiles: set[int], wait: S.Stmt) -> tuple[list[S.Stmt], bool]:
    """`stmts` with `wait` before the first statement that names a tile; whether it moved past any."""
    for pos, s in enumerate(stmts):
        if not _names(s, tiles):
            continue
        inner = _into(s, tiles, wait)
        if inner is not None:
            return [*stmts[:pos], inner, *stmts[pos + 1 :]], True
        return [*stmts[:pos], wait, *stmts[pos:]], pos > 0
    return [*stmts, wait], bool(stmts)


def _into(s: S.Stmt, tiles: set[int], wait: S.Stmt) -> S.Stmt | None:
    """`s` with the wait inside its body, where `s` only wraps the statement that names a tile."""
    if isinstance(s, S.SeqStmt):
        return S.seq(*_sink(list(s.stmts), tiles, wait)[0])
    if isinstance(s, S.Allocate) or (isinstance(s, S.LetStmt) and not _names(S.Evaluate(s.value), tiles)):
        body = s.body.stmts if isinstance(s.body, S.SeqStmt) else (s.body,)
        return dataclasses.replace(s, body=S.seq(*_sink(list(body), tiles, wait)[0]))
    return None


class _LateWaits(BufferKeepingMutator):
    def __init__(self) -> None:
        super().__init__()
        self.rings = 0

    def mutate_KernelLaunch(self, s: S.KernelLaunch) -> S.Stmt:
        if any(isinstance(n, ProducerLoop) for n in walk(s.body)):
            return s
        self.rings = _rings_in(s)
        return self.generic_mutate(s)

    def mutate_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        stmts = [self.mutate(x) for x in s.stmts]
        pos = len(stmts) - 1
        while pos >= 0:  # from the back, so a sunk wait is never a later copy's statement to cross
            copy = stmts[pos]
            if isinstance(copy, TmaCopy) and copy.ring == 0 and not copy.elected:
                stmts = stmts[:pos] + self._late(copy, stmts[pos + 1 :])
            pos -= 1
        return S.seq(*stmts)

    def _late(self, copy: TmaCopy, after: list[S.Stmt]) -> list[S.Stmt]:
        ring = self.rings + 1
        tiles = {id(load.dst) for load in copy.loads}
        moved, later = _sink(after, tiles, MbarWait(ring, 0))
        if not later:
            return [copy, *after]
        self.rings = ring
        return [MbarRing(ring, 1, 1), dataclasses.replace(copy, ring=ring), *moved]


@module_pass("sink-tma-waits")
def sink_tma_waits(mod: IRModule, ctx) -> IRModule:
    """TMA loads outside pipelines are waited for at their tile's first use (module docstring)."""
    return mod.with_functions(f.with_body(_LateWaits().mutate(f.body)) for f in mod.functions)
