"""Software pipelining of `T.Pipelined(n, num_stages=s)` loops with cp.async producers.

The async copies at the top level of the loop body are the producers; the rest is the consumer. Each
shared buffer the producers fill gets `s` stages (a leading dim); stage `k % s` holds tile k. The
loop becomes: a prologue issuing tiles 0 .. s-2; then per iteration k: wait until tile k has landed
(`cp.async.wait_group s-2`), a barrier (tile k visible, tile k-1 no longer read), issue tile k+s-1,
run the consumer on stage k % s. Every iteration commits one group (possibly empty), so the group
count stays exact. Async copies the schema does not fit are made synchronous (commit, wait 0) in place.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import AsyncCommit, AsyncCopy, AsyncWait, GemmCall
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator, substitute, walk
from tilecraft.transform.simt.barriers import PIPELINED_BUFFERS

SYNC = S.Evaluate(E.Call(dt.int32, "sync_threads", ()))


def _stmts(body: S.Stmt) -> list[S.Stmt]:
    return list(body.stmts) if isinstance(body, S.SeqStmt) else [body]


def _is_producer(s: S.Stmt) -> bool:
    leaves = [
        n for n in walk(s) if isinstance(n, S.Stmt) and not isinstance(n, (S.For, S.IfThenElse, S.SeqStmt))
    ]
    return bool(leaves) and all(isinstance(n, AsyncCopy) for n in leaves)


def _tile_elems(buf: Buffer) -> int:
    size = 1
    for d in buf.shape:
        size *= E.const_value(d)
    return size


class _Stage(Mutator):
    """Point accesses of the staged buffers at one stage."""

    def __init__(self, staged: dict[int, Buffer], stage: E.Expr, tiles: dict[int, int]) -> None:
        super().__init__()
        self.staged, self.stage, self.tiles = staged, stage, tiles

    def mutate_Buffer(self, buf):
        return buf

    def _offset(self, buf: Buffer) -> E.Expr:
        return E.mul(self.stage, self.tiles[id(buf)])

    def mutate_AsyncCopy(self, s: AsyncCopy) -> S.Stmt:
        new = self.staged.get(id(s.dst))
        if new is None:
            return s
        return dataclasses.replace(s, dst=new, dst_offset=E.add(self._offset(s.dst), s.dst_offset))

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.mutate(i) for i in e.indices)
        new = self.staged.get(id(e.buffer))
        if new is None:
            return E.BufferLoad(e.dtype, e.buffer, indices)
        return E.BufferLoad(e.dtype, new, (self.stage, *indices))

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        value = self.mutate(s.value)
        indices = tuple(self.mutate(i) for i in s.indices)
        new = self.staged.get(id(s.buffer))
        if new is None:
            return S.BufferStore(s.buffer, value, indices, span=s.span)
        return S.BufferStore(new, value, (self.stage, *indices), span=s.span)

    def mutate_GemmCall(self, s: GemmCall) -> S.Stmt:
        changes = {}
        for field, offset in (("a", "a_offset"), ("b", "b_offset")):
            buf = getattr(s, field)
            new = self.staged.get(id(buf))
            if new is not None:
                changes[field] = new
                changes[offset] = E.add(self._offset(buf), E.convert(getattr(s, offset)))
        return dataclasses.replace(s, **changes) if changes else s


class _Pipeline(Mutator):
    def __init__(self) -> None:
        super().__init__()
        self.staged: dict[int, Buffer] = {}

    def mutate_Buffer(self, buf):
        return buf

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        body = self.mutate(s.body)
        new = self.staged.get(id(s.buffer))
        if new is None:
            return S.Allocate(s.buffer, body, span=s.span)
        body = _retarget_annotations(body, s.buffer, new)
        return S.Allocate(new, body, span=s.span)

    def mutate_For(self, s: S.For) -> S.Stmt:
        s = self.generic_mutate(s)
        if s.kind is not S.ForKind.PIPELINED:
            return s
        stages = S.annotation(s.annotations, "num_stages") or 0
        if stages >= 2 and E.const_value(s.min) == 0:
            rebuilt = self._pipeline(s, stages)
            if rebuilt is not None:
                return rebuilt
        return _synchronous(dataclasses.replace(s, kind=S.ForKind.SERIAL))

    def _pipeline(self, loop: S.For, stages: int) -> S.Stmt | None:
        stmts = _stmts(loop.body)
        producers = [x for x in stmts if _is_producer(x)]
        consumers = [x for x in stmts if not _is_producer(x)]
        if not producers or any(isinstance(n, AsyncCopy) for c in consumers for n in walk(c)):
            return None
        buffers = {id(n.dst): n.dst for p in producers for n in walk(p) if isinstance(n, AsyncCopy)}
        tiles = {key: _tile_elems(buf) for key, buf in buffers.items()}
        for key, buf in buffers.items():
            self.staged[key] = Buffer(
                buf.name, (E.const(stages), *buf.shape), buf.dtype, buf.scope, span=buf.span
            )
        staged = {k: self.staged[k] for k in buffers}
        k, n = loop.loop_var, loop.extent
        produce = S.seq(*producers)
        prologue = []
        for step in range(stages - 1):
            issue = _Stage(staged, E.const(step), tiles).mutate(substitute(produce, {k: E.const(step)}))
            prologue += [S.IfThenElse(E.compare(E.LT, step, n), issue), AsyncCommit()]
        ahead = E.add(k, stages - 1)
        issue = _Stage(staged, E.floormod(ahead, stages), tiles).mutate(substitute(produce, {k: ahead}))
        consume = _Stage(staged, E.floormod(k, stages), tiles).mutate(S.seq(*consumers))
        body = S.seq(AsyncWait(stages - 2), SYNC, S.IfThenElse(E.compare(E.LT, ahead, n), issue), AsyncCommit(),
                     consume)  # fmt: skip
        annotations = ((PIPELINED_BUFFERS, tuple(staged.values())),)
        steady = S.For(k, E.const(0), n, S.ForKind.SERIAL, body, annotations, span=loop.span)
        return S.seq(*prologue, steady, AsyncWait(0))


def _retarget_annotations(body: S.Stmt, old: Buffer, new: Buffer) -> S.Stmt:
    class _Swap(Mutator):
        def mutate_Buffer(self, buf):
            return new if buf is old else buf

    return _Swap().mutate(body)


def _synchronous(loop: S.For) -> S.Stmt:
    """Async copies that are not pipelined complete right where they are issued."""

    class _Sync(Mutator):
        def mutate_Buffer(self, buf):
            return buf

        def mutate_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
            out = []
            for x in s.stmts:
                x = self.mutate(x)
                out.append(x)
                if not isinstance(x, AsyncCopy) and any(isinstance(n, AsyncCopy) for n in walk(x)):
                    out += [AsyncCommit(), AsyncWait(0)]
            return S.seq(*out)

    body = _Sync().mutate(S.seq(loop.body, S.SeqStmt(())))
    return dataclasses.replace(loop, body=body)


@module_pass("inject-software-pipeline")
def inject_software_pipeline(mod: IRModule, ctx) -> IRModule:
    """Pipelined loops overlap the cp.async copies of later tiles with the compute of the current one."""
    return mod.with_functions(f.with_body(_Pipeline().mutate(f.body)) for f in mod.functions)
