"""Software pipelining of `T.Pipelined(n, num_stages=s)` loops with cp.async producers.

The async copies at the top level of the loop body are the producers; the rest is the consumer. Each
shared buffer the producers fill gets `s` stages (a leading dim); stage `k % s` holds tile k. The
loop becomes: a prologue issuing tiles 0 .. s-2; then per iteration k: wait until tile k has landed
(`cp.async.wait_group s-2`), a barrier (tile k visible, tile k-1 no longer read), issue tile k+s-1,
run the consumer on stage k % s. Every iteration commits one group (possibly empty), so the group
count stays exact. Async copies the schema does not fit are made synchronous (commit, wait 0) in place.

TMA producers (`TmaCopy`, sm_90a) fill the stages through a ring of `s` mbarriers: the elected thread
announces each tile's bytes on the barrier of its stage, every thread waits on that barrier (its phase
bit, kept per ring) before consuming the stage. When the producers are all TMA and the consumer is only
wgmma gemms, the gemms leave their last group in flight (`wait_group 1`): iteration k waits for tile
k, issues its wgmmas (retiring iteration k-1's), meets the others at a barrier, and only then refills
stage (k-1) % s with tile k+s-1; a `wait_group 0` after the loop completes the last group. A TMA loop
with other code besides its gemms (flash decoding without a producer warpgroup) gets a ring per copy
instead (`_per_tile`): each tile is waited for before its first reader and refilled with the tile s
iterations on right after its last reader, behind a barrier.

Warp-specialized kernels (sm_90a unless tl.disable_warp_specialized; warp_specialize.py says which loops
qualify) get `full` rings (one arrival: the producer's expect-tx of the tile's bytes) and `empty` rings
(one arrival per consumer warp) instead. The loop becomes a `ProducerLoop` issuing every tile k into
stage k % s after waiting for that stage to be empty, then the consumer loop. A loop of TMA copies and
wgmma gemms only (a GEMM) has one ring pair: wait for tile k, issue its wgmmas (leaving them in flight),
release stage (k-1) % s, whose wgmmas have then completed; a `wait_group 0` follows. A loop with other
code (flash attention) has a ring pair per copy: the consumer runs the body in its order with each copy
replaced by the wait for its tile, and releases each tile after the last statement that reads it
(`_releases`; gemms there complete in place), which works with one stage per tile too (num_stages=1:
the producer refills a tile once its last reader is done, while the consumers work on the other tiles).
The warp-specialize pass later puts the two loops on their own warpgroups. In a GEMM of thread-block clusters with TMA multicast switched on (multicast.py),
the copies the cluster's blocks share become multicast slices and the empty rings count the consumer
warps of every block of the cluster, each warp releasing a stage in all of them.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import (
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    GemmCall,
    MbarArrive,
    MbarRing,
    MbarWait,
    ProducerLoop,
    TmaCopy,
    TmaLoad,
    VectorCopy,
    VectorLoad,
    VectorStore,
    VectorZero,
    WgmmaWait,
)
from tilecraft.cuda.op.gemm_plan import warp_specialization_enabled
from tilecraft.cuda.transform.guards import LoopBody, counted, counter, counting, guard_refusal, loop_body
from tilecraft.cuda.transform.in_flight import IN_PLACE, in_flight_gemm, left_in_flight
from tilecraft.cuda.transform.multicast import MULTICAST, SWITCH, ClusterShare, cluster_share, multicast_copy
from tilecraft.cuda.transform.overlap import OVERLAP, Piece, overlap_plan, overlapped
from tilecraft.cuda.transform.warp_specialize import (
    GENERAL,
    REGISTER_MARGIN,
    array_registers,
    consumer_refusal,
    enclosing_lets,
    gemms_only,
    note,
    register_split,
    specialization_candidate,
    tile_accesses,
)
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import BufferKeepingMutator, Mutator, substitute, walk
from tilecraft.transform.simt.barriers import PIPELINED_BUFFERS

NOT_PIPELINED = "T.Pipelined loop is not pipelined (its copies complete where they are issued)"
APART = "T.Pipelined loop keeps its gemms apart (no gemm-softmax overlap)"
SYNC = S.Evaluate(E.Call(dt.int32, "sync_threads", ()))


def _stmts(body: S.Stmt) -> list[S.Stmt]:
    return list(body.stmts) if isinstance(body, S.SeqStmt) else [body]


def _is_producer(s: S.Stmt) -> bool:
    leaves = [
        n
        for n in walk(s)
        if isinstance(n, S.Stmt) and not isinstance(n, (S.For, S.IfThenElse, S.SeqStmt, TmaLoad))
    ]
    return bool(leaves) and all(isinstance(n, (AsyncCopy, TmaCopy)) for n in leaves)


def _is_async(n) -> bool:
    return isinstance(n, (AsyncCopy, TmaCopy))


def _overlaps_wgmma(consumers: list[S.Stmt]) -> bool:
    """The consumer is wgmma gemms with shared operands only, so they may stay in flight across
    iterations ("wgmma_rs" completes in place: its A registers are the loop's to rewrite)."""
    return all(isinstance(c, GemmCall) and c.variant == "wgmma" for c in consumers)


def _tile_elems(buf: Buffer) -> int:
    size = 1
    for d in buf.shape:
        size *= E.const_value(d)
    return size


class _Stage(BufferKeepingMutator):
    """Point accesses of the staged buffers at one stage."""

    def __init__(
        self, staged: dict[int, Buffer], stage: E.Expr, tiles: dict[int, int], ring: int = 0
    ) -> None:
        super().__init__()
        self.staged, self.stage, self.tiles, self.ring = staged, stage, tiles, ring

    def _offset(self, buf: Buffer) -> E.Expr:
        return E.mul(self.stage, self.tiles[id(buf)])

    def mutate_AsyncCopy(self, s: AsyncCopy) -> S.Stmt:
        new = self.staged.get(id(s.dst))
        if new is None:
            return s
        return dataclasses.replace(s, dst=new, dst_offset=E.add(self._offset(s.dst), s.dst_offset))

    def mutate_TmaCopy(self, s: TmaCopy) -> S.Stmt:
        loads = []
        for load in s.loads:
            load = dataclasses.replace(load, coords=tuple(self.mutate(c) for c in load.coords))
            new = self.staged.get(id(load.dst))
            if new is not None:
                load = dataclasses.replace(
                    load, dst=new, dst_offset=E.add(self._offset(load.dst), load.dst_offset)
                )
            loads.append(load)
        return dataclasses.replace(s, loads=tuple(loads), ring=self.ring, stage=self.stage)

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

    def _moved(self, s: S.Stmt, *fields: tuple[str, str]) -> S.Stmt:
        """`s` with each (buffer, element offset) field pair that names a staged buffer pointed at the
        stage (the offsets of these statements are flat, so the stage adds whole tiles)."""
        s = self.generic_mutate(s)
        changes = {}
        for field, offset in fields:
            buf = getattr(s, field)
            new = self.staged.get(id(buf))
            if new is not None:
                changes[field] = new
                changes[offset] = E.add(self._offset(buf), E.convert(getattr(s, offset)))
        return dataclasses.replace(s, **changes) if changes else s

    # Vector accesses of a staged tile (a T.copy of the tile to global memory in the loop body): without
    # these the consumer read stage 0 whatever the iteration.
    def mutate_VectorCopy(self, s: VectorCopy) -> S.Stmt:
        return self._moved(s, ("dst", "dst_offset"), ("src", "src_offset"))

    def mutate_VectorLoad(self, s: VectorLoad) -> S.Stmt:
        return self._moved(s, ("dst", "dst_offset"), ("src", "src_offset"))

    def mutate_VectorZero(self, s: VectorZero) -> S.Stmt:
        return self._moved(s, ("dst", "dst_offset"))

    def mutate_VectorStore(self, s: VectorStore) -> S.Stmt:
        return self._moved(s, ("dst", "dst_offset"))

    def mutate_AtomicUpdate(self, s: AtomicUpdate) -> S.Stmt:
        s = self.generic_mutate(s)
        new = self.staged.get(id(s.buffer))
        return s if new is None else dataclasses.replace(s, buffer=new, indices=(self.stage, *s.indices))

    def mutate_GemmCall(self, s: GemmCall) -> S.Stmt:
        return self._moved(s, ("a", "a_offset"), ("b", "b_offset"))


class _Pipeline(BufferKeepingMutator):
    def __init__(self, specialize: bool = False, overlap: bool = False, general: bool = False,
                 multicast: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.multicast = multicast  # shared tiles of cluster kernels are multicast (multicast.SWITCH)
        self.overlap = overlap  # the consumers overlap the softmax with P @ V (overlap.py, opt-in)
        self.general = general  # the general schedule is allowed (warp_specialize.GENERAL, on by default)
        self.staged: dict[int, Buffer] = {}
        # every staged buffer made for one tile: two pipelined loops over a tile make one each
        self.versions: dict[int, list[Buffer]] = {}
        self.rings = 0  # mbarrier rings handed out in this function (ring 0 is the synchronous barrier)
        self.specialize = specialize  # warp specialization is on (warp_specialization_enabled)
        self.specialized: S.For | None = None  # the loop of the current kernel that gets a producer
        self.consumer_threads = 0
        self.enclosing: list[S.For] = []  # the loops around the one being rebuilt, outermost first
        self.cluster: ClusterShare | None = None  # the specialized loop's cluster, when it may multicast
        self.launch: S.KernelLaunch | None = None  # the kernel being rebuilt, as it came in

    def mutate_KernelLaunch(self, s: S.KernelLaunch) -> S.Stmt:
        s = hoist_loop_allocations(s)
        self.launch = s
        self.specialized = None
        if self.specialize:
            loop, reason = specialization_candidate(s, self.general)
            if reason is not None:
                note(loop, reason)
            elif loop is not None:
                self.specialized, self.consumer_threads = loop, s.threads[0]
        self.cluster = None
        if self.specialized is not None and self.multicast:
            self.cluster, reason = cluster_share(s, enclosing_lets(s.body, self.specialized))
            if reason is not None:
                note(self.specialized, reason, MULTICAST)
        return self.generic_mutate(s)

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        body = self.mutate(s.body)
        versions = self.versions.get(id(s.buffer))
        if not versions:
            return S.Allocate(s.buffer, body, span=s.span)
        # One allocation for the tile: the version with the most stages serves every loop (a loop with
        # fewer stages indexes only its first ones).
        new = max(versions, key=lambda b: E.const_value(b.shape[0]))
        for old in (s.buffer, *(v for v in versions if v is not new)):
            body = _retarget_annotations(body, old, new)
        return S.Allocate(new, body, span=s.span)

    def mutate_For(self, s: S.For) -> S.Stmt:
        specialized = s is self.specialized
        refusal = guard_refusal(self.launch, s) if s.kind is S.ForKind.PIPELINED else None
        self.enclosing.append(s)
        try:
            s = self.generic_mutate(s)
        finally:
            self.enclosing.pop()
        if s.kind is not S.ForKind.PIPELINED:
            return s
        stages = S.annotation(s.annotations, "num_stages") or 0
        # one stage pipelines on a producer warpgroup (warp_specialize.py) or with a ring per copy (_per_tile)
        if refusal is not None:
            note(s, refusal, NOT_PIPELINED)
        elif stages >= 1 and E.const_value(s.min) == 0:
            rebuilt = self._pipeline(s, stages, specialized)
            if rebuilt is not None:
                return rebuilt
        return _synchronous(dataclasses.replace(s, kind=S.ForKind.SERIAL))

    def _pipeline(self, loop: S.For, stages: int, specialized: bool = False) -> S.Stmt | None:
        body = loop_body(loop)
        stmts = list(body.stmts)
        producers = [x for x in stmts if _is_producer(x)]
        consumers = [x for x in stmts if not _is_producer(x)]
        if not producers or any(_is_async(n) for c in consumers for n in walk(c)):
            return None
        filled = [
            {id(n.dst): n.dst for n in walk(p) if isinstance(n, (AsyncCopy, TmaLoad))} for p in producers
        ]
        buffers = {key: buf for one in filled for key, buf in one.items()}
        if len(buffers) < sum(len(one) for one in filled):
            # Two copies fill one tile per iteration (one half, a gemm, the other half): a stage holds one
            # tile, so both would land in it before either gemm read it. Such a loop stays synchronous.
            return None
        per_tile = not specialized and _per_tile_fits(body, producers, consumers)
        if stages < 2 and not specialized and not per_tile:
            return None  # one stage pipelines only on a producer warpgroup or with a ring per copy
        tiles = {key: _tile_elems(buf) for key, buf in buffers.items()}
        for key, buf in buffers.items():
            staged_buf = Buffer(buf.name, (E.const(stages), *buf.shape), buf.dtype, buf.scope, span=buf.span)
            self.staged[key] = staged_buf
            self.versions.setdefault(key, []).append(staged_buf)
        staged = {k: self.staged[k] for k in buffers}
        if specialized and gemms_only(stmts):
            return self._specialized(loop, stages, body, producers, consumers, staged, tiles)
        if specialized:
            return self._specialized_general(loop, stages, body, staged, tiles)
        cp_async = any(isinstance(n, AsyncCopy) for p in producers for n in walk(p))
        tma = sum(isinstance(p, TmaCopy) for p in producers)  # each one arrives on the stage's barrier
        if tma != sum(isinstance(n, TmaCopy) for p in producers for n in walk(p)):
            return (
                None  # a conditional TMA copy would leave the barrier short of arrivals: keep it synchronous
            )
        if per_tile:
            return self._per_tile(loop, stages, body, staged, tiles)
        ring = 0
        if tma:
            self.rings += 1
            ring = self.rings
        k, n = loop.loop_var, loop.extent
        produce = S.seq(*producers)

        def issue(step: E.Expr) -> S.Stmt:
            stage = E.floormod(step, stages) if not isinstance(step, E.IntImm) else step
            copy = _Stage(staged, stage, tiles, ring).mutate(substitute(produce, body.values(k, step)))
            # an iteration the guard skips loads nothing (its stage stays unused); the guard is read only
            # for iterations that exist
            return S.IfThenElse(E.compare(E.LT, step, n), _when(body, body.taken(k, step), copy))

        commit = [AsyncCommit()] if cp_async else []
        prologue: list[S.Stmt] = [MbarRing(ring, stages, tma)] if tma else []
        if self.enclosing:
            # The loop's previous run (an outer iteration earlier) may still read the stages the prologue
            # refills: the last tile's consumers run after the last barrier of the loop.
            prologue.append(SYNC)
        for step in range(stages - 1):
            prologue += [issue(E.const(step)), *commit]
        stage = E.floormod(k, stages)
        consume = _Stage(staged, stage, tiles).mutate(S.seq(*consumers))
        landed = [MbarWait(ring, stage)] if tma else []
        after: list[S.Stmt] = [AsyncWait(0)] if cp_async else []
        taken = body.condition
        if tma and not cp_async and _overlaps_wgmma(consumers):
            consume = S.seq(*(dataclasses.replace(c, wait=1) for c in _stmts(consume)))
            accumulators = tuple({id(c.c): c.c for c in consumers}.values())
            # A skipped iteration completes the group still in flight: the refill below overwrites the
            # stage of the iteration before, which that group may read.
            skipped = WgmmaWait(0, accumulators) if body.guarded else None
            steps = S.seq(*landed, consume)
            steps = steps if taken is None else S.IfThenElse(taken, steps, skipped)
            steady = S.seq(steps, SYNC, issue(E.add(k, stages - 1)))
            after.append(WgmmaWait(0, accumulators))
        else:
            waits = [AsyncWait(stages - 2)] if cp_async else []
            steady = S.seq(*waits, *_guarded(taken, landed), SYNC, issue(E.add(k, stages - 1)), *commit,
                           *_guarded(taken, [consume]))  # fmt: skip
        annotations = ((PIPELINED_BUFFERS, tuple(staged.values())),)
        steady = S.For(k, E.const(0), n, S.ForKind.SERIAL, body.wrap(steady), annotations, span=loop.span)
        return S.seq(*prologue, steady, *after)

    def _per_tile(self, loop: S.For, stages: int, body: LoopBody, staged: dict[int, Buffer],
                  tiles: dict[int, int]) -> S.Stmt:  # fmt: skip
        """A TMA pipeline without a producer warpgroup whose body has code besides gemms (flash
        decoding): a ring per copy, so each tile is waited for right before its first reader (Q @ K^T
        runs while V is in flight) and refilled right after its last reader with the tile `stages`
        iterations on, behind one barrier (`stages` tiles in flight, where one ring for all copies would
        refill at the next iteration's top with `stages - 1`). With one stage (num_stages=1: a fused MoE's
        gate and up projections) a tile's next load still runs during the statements after its last
        reader, where one ring would have no prefetch at all."""
        k, n = loop.loop_var, loop.extent
        stmts = list(body.stmts)
        copies = [s for s in stmts if isinstance(s, TmaCopy)]
        rest = [s for s in stmts if not isinstance(s, TmaCopy)]
        rings = {id(c): self.rings + 1 + i for i, c in enumerate(copies)}
        self.rings += len(copies)
        waits, releases = _first_and_last_readers(rest, copies)

        def issue(copy: TmaCopy, step: E.Expr) -> S.Stmt:
            stage = _ring_slot(step, stages)[0] if not isinstance(step, E.IntImm) else step
            tile = _Stage(staged, stage, tiles, rings[id(copy)]).mutate(substitute(copy, body.values(k, step)))
            return S.IfThenElse(E.compare(E.LT, step, n), tile)

        prologue: list[S.Stmt] = [MbarRing(rings[id(c)], stages, 1) for c in copies]
        if self.enclosing:
            prologue.append(SYNC)  # the loop's previous run may still read the stages refilled here
        prologue += [issue(c, E.const(step)) for step in range(stages) for c in copies]
        stage = _ring_slot(k, stages)[0]
        steps: list[S.Stmt] = []
        for pos in range(len(rest) + 1):
            steps += [MbarWait(rings[id(c)], stage) for c in waits.get(pos, ())]
            if pos < len(rest):
                steps.append(_Stage(staged, stage, tiles).mutate(rest[pos]))
            if releases.get(pos):
                steps += [SYNC, *(issue(c, E.add(k, stages)) for c in releases[pos])]
        annotations = ((PIPELINED_BUFFERS, tuple(staged.values())),)
        steady = S.For(k, E.const(0), n, S.ForKind.SERIAL, body.wrap(S.seq(*steps)), annotations, span=loop.span)
        return S.seq(*prologue, steady)

    def _specialized(self, loop: S.For, stages: int, body: LoopBody, producers: list[S.Stmt],
                     consumers: list[S.Stmt], staged: dict[int, Buffer],
                     tiles: dict[int, int]) -> S.Stmt:  # fmt: skip
        """The producer loop and the consumer loop of a warp-specialized pipeline (module docstring)."""
        full, empty = self.rings + 1, self.rings + 2
        self.rings += 2
        k, n = loop.loop_var, loop.extent
        # Inside T.Persistent the ring runs on across tiles: wave w's iteration k is use w * n + k of it
        # (warp_specialize.specialization_candidate: n is the same for every tile). A guarded loop's ring
        # runs on the count of the iterations taken, which each role keeps (guards.py).
        wave = self.enclosing[-1].loop_var if self.enclosing else None
        unguarded = k if wave is None else E.add(E.mul(wave, n), k)
        loaded, taken = _Taken.of(body, "loaded"), _Taken.of(body, "taken")
        it = unguarded if loaded is None else loaded.var
        stage, use = E.floormod(it, stages), E.floordiv(it, stages)
        copies = _stmts(_Stage(staged, stage, tiles, full).mutate(S.seq(*producers)))
        shared = self._shared(loop, producers, wave, body)
        copies = [multicast_copy(c, self.cluster.size) if id(p) in shared else c for p, c in zip(producers, copies)]
        blocks = self.cluster.size if shared else 1  # the blocks whose consumers release each stage
        # one expect-tx per tile: the full barrier completes on one arrival and all the stage's bytes
        tile = TmaCopy(tuple(load for c in copies for load in c.loads), sum(c.bytes for c in copies), full,
                       stage, elected=True, span=copies[0].span)  # fmt: skip
        emptied = MbarWait(empty, stage, E.floormod(E.add(use, 1), 2))
        produce = _loop(loop, body, loaded, S.seq(emptied, tile))
        it = unguarded if taken is None else taken.var
        stage, use = E.floormod(it, stages), E.floordiv(it, stages)
        gemms = _Stage(staged, stage, tiles).mutate(S.seq(*consumers))
        in_flight = [dataclasses.replace(c, wait=1) for c in _stmts(gemms)]
        # tile k-1's wgmmas have completed once tile k's return with one group in flight
        previous = E.floormod(E.add(it, stages - 1), stages)
        released = MbarArrive(empty, previous) if blocks == 1 else MbarArrive(empty, previous, cluster=blocks)
        release = S.IfThenElse(E.compare(E.GT, k if taken is None else taken.var, 0), released)
        steps = S.seq(MbarWait(full, stage, E.floormod(use, 2)), *in_flight, release)
        annotations = ((PIPELINED_BUFFERS, tuple(staged.values())),)
        consume = _loop(loop, body, taken, steps, annotations)
        threads = self.consumer_threads
        # the next tile's producer waits for the last stage too: release it once its wgmmas completed
        last = [] if wave is None else [S.IfThenElse(E.compare(E.GT, n, 0), MbarArrive(empty, E.floormod(
            E.add(E.mul(wave, n), E.sub(n, 1)), stages)))]  # fmt: skip
        return S.seq(
            MbarRing(full, stages, 1),
            MbarRing(empty, stages, threads // 32 * blocks),
            ProducerLoop(produce, threads, span=loop.span),
            consume,
            WgmmaWait(0, tuple({id(c.c): c.c for c in consumers}.values())),
            *last,
        )

    def _shared(self, loop: S.For, producers: list[S.Stmt], wave, body: LoopBody) -> set[int]:
        """The copies (ids) whose tiles the blocks of the kernel's cluster share, which are multicast."""
        if self.cluster is None:
            return set()
        if body.guarded:
            note(loop, "its copies are under a condition (the cluster's blocks may load different tiles)",
                 MULTICAST)  # fmt: skip
            return set()
        if wave is not None:
            note(loop, "the loop is in a T.Persistent loop (its blocks' tiles are not provably shared)", MULTICAST)
            return set()
        reasons = {id(p): self.cluster.shares(p, loop.extent) for p in producers}
        if all(reasons.values()):
            note(loop, f"no tile of the loop is shared by the cluster's blocks ({next(iter(reasons.values()))})",
                 MULTICAST)  # fmt: skip
        return {key for key, reason in reasons.items() if reason is None}

    def _specialized_general(self, loop: S.For, stages: int, body: LoopBody, staged: dict[int, Buffer],
                             tiles: dict[int, int]) -> S.Stmt:  # fmt: skip
        """The producer and consumer loops of a warp-specialized pipeline with other code between its
        copies (module docstring): a full and an empty ring per copy, so the consumers wait for each tile
        where its copy stood (flash attention's Q @ K^T runs while V is in flight) and release it
        after the last statement that reads it."""
        k = loop.loop_var
        stmts = list(body.stmts)
        if self.cluster is not None:
            note(loop, "only a GEMM's loop (TMA loads and wgmma gemms) multicasts", MULTICAST)
        loaded, taken = _Taken.of(body, "loaded"), _Taken.of(body, "taken")
        it = k if loaded is None else loaded.var
        stage, use = _ring_slot(it, stages)
        copies = [s for s in stmts if isinstance(s, TmaCopy)]
        rings = {id(c): (self.rings + 1 + 2 * i, self.rings + 2 + 2 * i) for i, c in enumerate(copies)}
        self.rings += 2 * len(copies)
        released = _releases(stmts)
        produce = []
        for s in stmts:
            if isinstance(s, TmaCopy):
                full, empty = rings[id(s)]
                tile = dataclasses.replace(_Stage(staged, stage, tiles, full).mutate(s), elected=True)
                produce += [MbarWait(empty, stage, E.floormod(E.add(use, 1), 2)), tile]

        def pieces_at(it: E.Expr, position: E.Expr | None = None) -> list[Piece]:
            """Each statement of iteration `it` as the consumers run it, with the releases after it; the
            ring's `position` of the iteration is `it` unless given (a guarded loop's count)."""
            position = it if position is None else position
            at, use_at = _ring_slot(position, stages)
            pieces = []
            for pos, s in enumerate(stmts):
                if isinstance(s, TmaCopy):
                    consumed = MbarWait(rings[id(s)][0], at, E.floormod(use_at, 2))
                else:
                    consumed = _Stage(staged, at, tiles).mutate(s if it is k else substitute(s, {k: it}))
                # a wgmma call has completed for the whole warpgroup (wait_group 0); other reads are each lane's
                converge = not (isinstance(s, GemmCall) and s.variant.startswith("wgmma"))
                pieces.append(
                    (consumed, [MbarArrive(rings[id(c)][1], at, converge) for c in released.get(pos, ())])
                )
            return pieces

        threads = self.consumer_threads
        producer = _loop(loop, body, loaded, S.seq(*produce))
        annotations = ((PIPELINED_BUFFERS, tuple(staged.values())),)
        barriers = [MbarRing(r, stages, arrivals) for full, empty in rings.values()
                    for r, arrivals in ((full, 1), (empty, threads // 32))]  # fmt: skip
        producer = ProducerLoop(producer, threads, general=True, span=loop.span)
        consumer = self._consumer(loop, body, taken, pieces_at, annotations, stages)
        return S.seq(*barriers, producer, *consumer)

    def _registers_refusal(self) -> str | None:
        """Why the overlap would spill: it keeps S, P and O live together (P's registers are read by the
        wgmma in flight while the next softmax runs), so every per-thread array must fit the consumers'
        registers at once."""
        registers = array_registers(self.launch.body)
        budget = register_split(self.consumer_threads, True, registers).consumer
        if registers + REGISTER_MARGIN <= budget:
            return None
        return (f"its per-thread arrays take {registers} registers per consumer thread, and with "
                f"{REGISTER_MARGIN} more for addresses they do not fit the {budget} a consumer has")

    def _consumer(self, loop: S.For, body: LoopBody, taken: _Taken | None, pieces_at, annotations,
                  stages: int) -> list[S.Stmt]:  # fmt: skip
        """The consumer loop of the general schedule, or its prologue, loop and epilogue with the
        gemm-softmax overlap (overlap.py) where the pass config asks for it and the loop fits, or with its
        one gemm left in flight (in_flight.py)."""
        k, n = loop.loop_var, loop.extent
        stmts = list(body.stmts)
        if self.overlap and (body.guarded or body.lets):
            # the overlap runs the next iteration's first gemm in this one: neither its lets nor whether it
            # is taken are this iteration's
            note(loop, "its body has lets or a guard", APART)
        elif self.overlap:
            plan, reason = overlap_plan(stmts)
            if plan is not None:
                reason = self._registers_refusal()
            if plan is not None and reason is None:
                return overlapped(plan, stmts, pieces_at, k, n, annotations, loop.span)
            note(loop, reason, APART)
        pieces = pieces_at(k) if taken is None else pieces_at(k, taken.var)
        at, reason = in_flight_gemm(stmts, stages)
        if at is None:
            note(loop, reason, IN_PLACE)
            steps = S.seq(*(x for stmt, releases in pieces for x in (stmt, *releases)))
            return [_loop(loop, body, taken, steps, annotations)]
        position = k if taken is None else taken.var
        steps = S.seq(*left_in_flight(pieces, at, position, position, stages))
        return [_loop(loop, body, taken, steps, annotations), WgmmaWait(0, (stmts[at].c,))]


@dataclasses.dataclass(frozen=True)
class _Taken:
    """One role's count of the iterations a guarded loop takes (guards.py): `var` holds this iteration's
    position in the ring, `count` the number taken so far."""

    count: Buffer
    var: E.Var

    @classmethod
    def of(cls, body: LoopBody, name: str) -> _Taken | None:
        return cls(counter(name), E.Var(dt.int32, f"{name}_k")) if body.guarded else None


def _loop(loop: S.For, body: LoopBody, taken: _Taken | None, steps: S.Stmt, annotations=()) -> S.Stmt:
    """One role's loop over the iterations: `steps` inside the body's lets, where a guarded loop runs
    them only for the iterations it takes, counting them."""
    k, n = loop.loop_var, loop.extent
    if taken is not None:
        steps = counted(taken.count, taken.var, body.condition, steps)
    rebuilt = S.For(k, E.const(0), n, S.ForKind.SERIAL, body.wrap(steps), annotations, span=loop.span)
    return rebuilt if taken is None else counting(taken.count, rebuilt)


def _when(body: LoopBody, taken: E.Expr, stmt: S.Stmt) -> S.Stmt:
    return S.IfThenElse(taken, stmt) if body.guarded else stmt


def _guarded(condition: E.Expr | None, stmts: list[S.Stmt]) -> list[S.Stmt]:
    """`stmts` under the guard (none: as they are)."""
    if condition is None or not stmts:
        return stmts
    return [S.IfThenElse(condition, S.seq(*stmts))]


def _ring_slot(it: E.Expr, stages: int) -> tuple[E.Expr, E.Expr]:
    """The stage iteration `it` uses and how many times it was used before (stage 0, use `it` for a ring
    of one stage)."""
    if stages == 1:
        return E.const(0), it
    return E.floormod(it, stages), E.floordiv(it, stages)


def _releases(stmts: list[S.Stmt]) -> dict[int, list[TmaCopy]]:
    """Position in the body -> the copies whose tiles are last read there; a tile nothing reads is
    released right after its wait (no statement reads a tile before its copy: specialization_candidate)."""
    last: dict[int, tuple[TmaCopy, int]] = {}
    for pos, s in enumerate(stmts):
        if isinstance(s, TmaCopy):
            last[id(s)] = (s, pos)
            continue
        reads = tile_accesses(s)[0]
        for key, (copy, _) in list(last.items()):
            if reads & {id(load.dst) for load in copy.loads}:
                last[key] = (copy, pos)
    out: dict[int, list[TmaCopy]] = {}
    for copy, pos in last.values():
        out.setdefault(pos, []).append(copy)
    return out


def _per_tile_fits(body: LoopBody, producers: list[S.Stmt], consumers: list[S.Stmt]) -> bool:
    """The loop takes a ring per copy (`_Pipeline._per_tile`): its copies are all unconditional TMA
    copies, its body is unguarded and has code besides wgmma gemms of shared operands (those keep their
    group in flight on one ring), and no statement writes a loaded tile or reads one before its copy."""
    if body.guarded or not all(isinstance(p, TmaCopy) for p in producers) or _overlaps_wgmma(consumers):
        return False
    return consumer_refusal(list(body.stmts)) is None


def _first_and_last_readers(rest: list[S.Stmt], copies: list[TmaCopy]
                            ) -> tuple[dict[int, list[TmaCopy]], dict[int, list[TmaCopy]]]:  # fmt: skip
    """Position in `rest` -> the copies whose tiles are first read there (wait before it), and -> those
    last read there (refill after it); a tile nothing reads is waited for and refilled at the end
    (position len(rest))."""
    first: dict[int, list[TmaCopy]] = {}
    last: dict[int, list[TmaCopy]] = {}
    for copy in copies:
        tiles = {id(load.dst) for load in copy.loads}
        readers = [pos for pos, s in enumerate(rest) if tile_accesses(s)[0] & tiles] or [len(rest)]
        first.setdefault(readers[0], []).append(copy)
        last.setdefault(readers[-1], []).append(copy)
    return first, last


def hoist_loop_allocations(launch: S.KernelLaunch) -> S.KernelLaunch:
    """The kernel with the tiles a T.Pipelined loop body allocates first (TileLang allows `A_s =
    T.alloc_shared(...)` inside the loop, and allocates every buffer of a block once, at its top)
    allocated around the loop instead, with their layout annotations: the body's statements are then
    its copies and its consumers, which the pipeline can stage (a body that is one allocation was
    neither, and stayed synchronous). An allocation holds no value from one iteration to the next, so
    one allocation for all iterations is the same program."""

    class _Hoist(BufferKeepingMutator):
        def mutate_For(self, s: S.For) -> S.Stmt:
            s = self.generic_mutate(s)
            if s.kind is not S.ForKind.PIPELINED:
                return s
            allocations, annotations, body = _leading_allocations(s.body)
            if not allocations:
                return s
            out: S.Stmt = dataclasses.replace(s, body=body)
            for alloc in reversed(allocations):
                mine = [a for a in annotations if a.buffer is alloc.buffer]
                out = S.Allocate(alloc.buffer, S.seq(*mine, out) if mine else out, span=alloc.span)
            return out

    return _Hoist().mutate(launch)


def _leading_allocations(body: S.Stmt) -> tuple[list[S.Allocate], list[S.AnnotateLayout], S.Stmt]:
    """The allocations that wrap the rest of a loop body (below its lets), the layout annotations of
    those buffers that open their bodies, and the body without them (lets kept in place)."""
    lets: list[S.LetStmt] = []
    allocations: list[S.Allocate] = []
    annotations: list[S.AnnotateLayout] = []
    while True:
        if isinstance(body, S.SeqStmt) and len(body.stmts) == 1:
            body = body.stmts[0]
        elif isinstance(body, S.LetStmt):
            lets.append(body)
            body = body.body
        elif isinstance(body, S.Allocate) and body.buffer.scope != "local.var":
            allocations.append(body)
            body = _take_annotations(body.body, allocations, annotations)
        elif _ends_in_allocation(body):
            # a tail the body allocates for (a macro's T.alloc_local after the copies): its statements
            # join the body's, so a tile's last reader among them is a statement of its own
            *head, tail = body.stmts
            allocations.append(tail)
            body = S.seq(*head, _take_annotations(tail.body, allocations, annotations))
        else:
            break
    for let in reversed(lets):
        body = dataclasses.replace(let, body=body)
    return allocations, annotations, body


def _take_annotations(body: S.Stmt, allocations: list[S.Allocate], annotations: list[S.AnnotateLayout]) -> S.Stmt:
    """`body` without the layout annotations of `allocations` that open it (appended to `annotations`)."""
    while isinstance(body, S.SeqStmt) and body.stmts and _annotates(body.stmts[0], allocations):
        annotations.append(body.stmts[0])
        body = S.seq(*body.stmts[1:])
    if _annotates(body, allocations):
        annotations.append(body)
        body = S.SeqStmt(())
    return body


def _ends_in_allocation(body: S.Stmt) -> bool:
    return (isinstance(body, S.SeqStmt) and len(body.stmts) > 1 and isinstance(body.stmts[-1], S.Allocate)
            and body.stmts[-1].buffer.scope != "local.var")  # fmt: skip


def _annotates(s: S.Stmt, allocations: list[S.Allocate]) -> bool:
    return isinstance(s, S.AnnotateLayout) and any(s.buffer is a.buffer for a in allocations)


def _retarget_annotations(body: S.Stmt, old: Buffer, new: Buffer) -> S.Stmt:
    class _Swap(Mutator):
        def mutate_Buffer(self, buf):
            return new if buf is old else buf

    return _Swap().mutate(body)


def _synchronous(loop: S.For) -> S.Stmt:
    """Async copies that are not pipelined complete right where they are issued."""

    class _Sync(BufferKeepingMutator):
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
    specialize = warp_specialization_enabled(ctx.target, ctx.pass_configs)
    # Both are on by default since the H200 run of 2026-12-01 (benchmarks/RESULTS.md); the overlap runs on
    # the general schedule, so switching the general schedule off switches the overlap off too.
    general = bool(ctx.pass_configs.get(GENERAL, True))
    overlap = specialize and general and bool(ctx.pass_configs.get(OVERLAP, True))
    multicast = bool(ctx.pass_configs.get(SWITCH, False))
    return mod.with_functions(
        f.with_body(_Pipeline(specialize, overlap, general, multicast).mutate(f.body)) for f in mod.functions
    )
