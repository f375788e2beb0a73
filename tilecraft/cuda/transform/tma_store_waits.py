"""place-tma-store-waits: the thread that issues TMA stores waits for them to have read their tiles
before anything writes those tiles again, and before the kernel exits.

A TMA store (`TmaStoreCopy`) reads its shared tile asynchronously after it is issued, until the issuing
thread's `cp.async.bulk.wait_group.read`. This pass follows each kernel in program order (through
branches, and loops with the hazard from one iteration's store to the next iteration's writes) and puts
a `TmaStoreWait` of the tiles in flight right before the first statement that may write one of them:
a later copy into the tile, or the next tile of a persistent kernel. Barrier insertion, which runs
next, sees the wait as a read of the tiles, so that write is separated from it by a barrier and no
thread overwrites what the TMA unit still reads. A last wait ends the kernel's body (shared memory must
not be released while the TMA unit reads it); it also keeps the tiles in scope to the end, so that
narrow-shared-scopes gives no later buffer their bytes (the planner could otherwise reuse them under a
store in flight). Statements with no TMA store are returned unchanged.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import TmaStoreCopy, TmaStoreWait, shared_accesses
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, children, map_launches, walk
from tilecraft.transform.simt.barriers import Accesses


def _statements_with_stores(root: S.Stmt) -> set[int]:
    """The ids of the statements under `root` (itself included) that hold a TMA store; statements only
    (a store is never inside an expression), so the large address expressions are not walked, and each
    statement once (the placement visits a loop's body twice, at every depth)."""
    found: set[int] = set()

    def visit(s: S.Stmt) -> bool:
        held = isinstance(s, TmaStoreCopy)
        for child in children(s):
            for item in child if isinstance(child, tuple) else (child,):
                if isinstance(item, S.Stmt) and visit(item):
                    held = True
        if held:
            found.add(id(s))
        return held

    visit(root)
    return found


Pending = dict[int, int]  # tile id -> bulk groups committed after its newest store (the fewest on any path)


def _merged(a: Pending, b: Pending) -> Pending:
    """Where two paths meet: a tile in flight on either, with the fewer groups committed after it."""
    out = dict(a)
    for key, count in b.items():
        out[key] = min(count, out.get(key, count))
    return out


class _Waits:
    """Program-order placement of the waits; `pending` holds the tiles whose stores may be in flight,
    each with the number of bulk groups committed after its newest store on every path (a TMA store
    commits one group). A wait for tiles all of which have at least N newer groups waits for all but
    the N newest groups (`TmaStoreWait.pending`), so that a store of another tile stays in flight: two
    staging tiles used in turn (split-staging-tiles) overlap one tile's store with the other's writes."""

    def __init__(self, tiles: dict[int, Buffer], with_stores: set[int]) -> None:
        self.tiles = tiles
        self.with_stores = with_stores  # ids of the statements holding a store (the original tree's)
        self.accesses = Accesses(set(), shared_accesses)

    def run(self, s: S.Stmt, pending: Pending) -> tuple[S.Stmt, Pending]:
        if isinstance(s, TmaStoreCopy):
            stored = {id(t) for t in s.tiles}
            after = {k: n + 1 for k, n in pending.items() if k not in stored}
            return s, {**after, **dict.fromkeys(stored, 0)}
        if id(s) not in self.with_stores:
            return self._before_writes(s, pending)
        if isinstance(s, S.SeqStmt):
            out = []
            for child in s.stmts:
                child, pending = self.run(child, pending)
                out.append(child)
            return S.seq(*out), pending
        if isinstance(s, (S.LetStmt, S.Allocate)):
            body, pending = self.run(s.body, pending)
            return dataclasses.replace(s, body=body), pending
        if isinstance(s, S.IfThenElse):
            then_case, a = self.run(s.then_case, pending)
            else_case, b = (None, pending) if s.else_case is None else self.run(s.else_case, pending)
            return dataclasses.replace(s, then_case=then_case, else_case=else_case), _merged(a, b)
        if isinstance(s, (S.For, S.While)):
            # an iteration may start with the previous one's stores in flight
            _, end = self.run(s.body, pending)
            body, end = self.run(s.body, _merged(pending, end))
            return dataclasses.replace(s, body=body), _merged(pending, end)
        raise AssertionError(f"place-tma-store-waits: a TMA store inside a {type(s).__name__}")

    def _before_writes(self, s: S.Stmt, pending: Pending) -> tuple[S.Stmt, Pending]:
        if not pending:
            return s, pending
        _, writes = self.accesses(s)
        hit = writes & pending.keys()
        if not hit:
            return s, pending
        newer = min(pending[k] for k in hit)
        wait = TmaStoreWait(tuple(self.tiles[k] for k in self.tiles if k in hit), newer, span=s.span)
        return S.seq(wait, s), {k: n for k, n in pending.items() if n < newer}


def _with_final_wait(body: S.Stmt, tiles: tuple[Buffer, ...]) -> S.Stmt:
    """`body` ending with a wait for `tiles`, inside the leading allocations and bindings (the tiles'
    scopes, where narrow-shared-scopes takes the top-level statements from)."""
    if isinstance(body, (S.Allocate, S.LetStmt)):
        return dataclasses.replace(body, body=_with_final_wait(body.body, tiles))
    return S.seq(body, TmaStoreWait(tiles))


def _leading_allocations(body: S.Stmt) -> set[int]:
    found = set()
    while isinstance(body, (S.Allocate, S.LetStmt)):
        if isinstance(body, S.Allocate):
            found.add(id(body.buffer))
        body = body.body
    return found


def _place_waits(launch: S.KernelLaunch) -> S.Stmt:
    tiles = {id(t): t for n in walk(launch.body) if isinstance(n, TmaStoreCopy) for t in n.tiles}
    if not tiles:
        return launch
    body, pending = _Waits(tiles, _statements_with_stores(launch.body)).run(launch.body, {})
    last = tuple(t for k, t in tiles.items() if k in pending)
    top = _leading_allocations(body)
    at_top = tuple(t for t in last if id(t) in top)
    if at_top:
        body = _with_final_wait(body, at_top)
    inner = {id(t) for t in last if id(t) not in top}
    if inner:
        body = _EndOfScope(inner).mutate(body)
    return dataclasses.replace(launch, body=body)


class _EndOfScope(BufferKeepingMutator):
    """A wait at the end of the scope of each tile allocated below the kernel's leading allocations."""

    def __init__(self, tiles: set[int]) -> None:
        super().__init__()
        self.tiles = tiles

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        s = self.generic_mutate(s)
        if id(s.buffer) not in self.tiles:
            return s
        return dataclasses.replace(s, body=S.seq(s.body, TmaStoreWait((s.buffer,), span=s.span)))


@module_pass("place-tma-store-waits")
def place_tma_store_waits(mod: IRModule, ctx) -> IRModule:
    """Each TMA store's issuing thread waits for the store's reads before its tile is written again
    and at the end of the kernel; barrier insertion then orders the other threads after that wait."""
    return map_launches(mod, _place_waits)
