"""The mbarrier protocol of warp-specialized pipelines, executed without a GPU.

The producer thread and every consumer warp of the lowered IR run as separate processes under random
schedules. mbarriers follow the PTX ISA (an arrival count per phase, expect-tx bytes that the TMA
transfers complete, `try_wait.parity` returning once the phase of that parity has completed), TMA
transfers land at random later times, and wgmma groups complete at the consumer's `wait_group`. Only
the statements of the protocol run (waits, arrivals, TMA copies, gemms, named barriers, branches on the
iteration); the checks are: no deadlock and no extra arrival in a phase, every gemm reads the tile of
its own iteration (landed, and not overwritten until its wgmmas complete), and both roles run the same
trip count and finish with every transfer landed. Kernels in thread-block clusters with TMA multicast run
every block of one cluster together: a multicast slice lands in each block's stage and completes on each
one's barrier, a release arrives on every block's empty barrier, and a gemm needs every slice of its tile.
A loop under a guard read from global memory (block-sparse kernels) runs with the mask given as that
memory, its roles' counters of taken iterations executed too; every tile records the iteration that
loaded it, so the checks also see that each taken iteration is loaded and consumed exactly once, in
its own iteration, and no other is.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest

from benchmarks.cluster_check import build as cluster_gemm
from benchmarks.hopper_attention import build as attention
from benchmarks.hopper_check import build as gemm
from tilecraft.backend.context import create_backend_context
from tilecraft.cuda.ir import (
    GemmCall,
    MbarArrive,
    MbarRing,
    MbarWait,
    NamedBarrier,
    SetMaxNReg,
    TmaCopy,
    WgmmaWait,
)
from tilecraft.cuda.transform.guards import COUNTER_SCOPE
from tilecraft.cuda.transform.warp_specialize import GENERAL, PRODUCER_THREADS, enclosing_lets
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.eval import evaluate
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator, walk
from tilecraft.testing.conformance import attention_bhsd as AB
from tilecraft.testing.conformance import attention_bshd as AS
from tilecraft.testing.conformance import block_sparse as BS
from tilecraft.testing.conformance import clusters as CL
from tilecraft.testing.conformance import persistent_tiles as PT
from tilecraft.testing.conformance import register_operands as R
from tilecraft.testing.conformance import regressions as D
from tilecraft.transform.simt.barriers import PIPELINED_BUFFERS
from tilecraft.transform.widen_fragments import widen_fragments

PROTOCOL = (MbarWait, MbarArrive, TmaCopy, GemmCall, WgmmaWait, NamedBarrier)


def _launch(func, configs=None) -> S.KernelLaunch:
    ctx = create_backend_context("cuda -arch=sm_90a", None, "auto", require_available=False)
    # the general schedule alone unless a test asks for the overlap (OVERLAP below)
    configs = {GENERAL: True, "tilecraft.cuda.gemm_softmax_overlap": False, **(configs or {})}
    _, device = ctx.split(ctx.lower(widen_fragments(IRModule.from_func(func)), configs))
    return device.functions[0].body


@dataclass
class Barrier:
    count: int
    pending: int
    phase: int = 0  # completed phases
    tx: int = 0

    def arrive(self, where: str) -> None:
        assert self.pending > 0, f"{where}: an arrival beyond the barrier's count in one phase"
        self.pending -= 1
        self._complete()

    def transfer(self, bytes_: int) -> None:
        self.tx -= bytes_
        self._complete()

    def _complete(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def passed(self, parity: int) -> bool:
        return self.phase % 2 != parity  # try_wait.parity: the phase of that parity has completed


@dataclass
class Tile:
    """What one stage of a staged buffer holds: the iteration's tile, landed or in flight."""

    iteration: int = -1
    landed: bool = False
    version: int = 0
    loop: int = -1  # the producer's loop iteration that loaded it


@dataclass
class World:
    """One block: its barriers and stages. The blocks of a cluster share `transfers` and see each other
    as `cluster` (index: rank), where multicast loads land and remote arrivals go."""

    rings: dict[int, tuple[int, int]]  # ring -> (stages, arrivals)
    tiles: dict[str, int]  # staged buffer -> elements per stage
    warps: int
    parts: dict[str, int] = field(default_factory=dict)  # buffer -> slices its stage is multicast in
    barriers: dict[tuple[int, int], Barrier] = field(default_factory=dict)
    stages: dict[tuple[str, int, int], Tile] = field(default_factory=dict)
    transfers: list = field(default_factory=list)  # pending TMA completions
    named: dict[int, int] = field(default_factory=dict)  # named barrier -> arrivals in this generation
    generations: dict[int, int] = field(default_factory=dict)
    holds: dict[int, bool] = field(default_factory=dict)
    cluster: list[World] = field(default_factory=list)

    def __post_init__(self) -> None:
        for ring, (stages, arrivals) in self.rings.items():
            for s in range(stages):
                self.barriers[(ring, s)] = Barrier(arrivals, arrivals)

    def protocol(self, s: S.Stmt) -> bool:
        """`s` holds statements of the protocol (cached: every warp asks for every statement)."""
        if id(s) not in self.holds:
            self.holds[id(s)] = any(isinstance(n, PROTOCOL) for n in walk(s))
        return self.holds[id(s)]

    def stage_of(self, buf: str, offset: int, part: int = 0) -> Tile:
        return self.stages.setdefault((buf, offset // self.tiles[buf], part), Tile())

    def slices(self, buf: str, offset: int) -> list[Tile]:
        """The tiles a gemm reads at `offset`: the stage's slices where it is multicast."""
        return [self.stage_of(buf, offset, part) for part in range(self.parts.get(buf, 1))]


class Process:
    """One producer thread or one consumer warp running its statements. Tiles are numbered by
    arrival: the i-th copy into a buffer loads its tile i, and the i-th run of a gemm must read tile i
    of each staged operand, whichever loop iteration (or prologue) runs it."""

    def __init__(self, world: World, name: str, stmts: list[S.Stmt], env: dict) -> None:
        self.world, self.name, self.stmts, self.env = world, name, stmts, env
        self.groups: list[list[tuple[Tile, int, int]]] = []  # wgmma groups in flight: (tile, number, version)
        self.runs: dict[tuple, int] = {}  # (gemm or copy, buffer) -> times it ran
        self.iteration = -1  # of the innermost loop running
        self.loaded: list[tuple[str, int]] = []  # (buffer, iteration) of each tile the producer loaded
        self.consumed: list[tuple[str, int, int]] = []  # (buffer, iteration, the tile's) of each gemm read
        self.scalars: dict[Buffer, int] = {}  # the values of the role's counters (guards.py)
        self.steps = self._run()
        self.done = False

    def value(self, e) -> int:
        return int(evaluate(E.convert(e), self.env))

    def _count(self, key: tuple) -> int:
        self.runs[key] = self.runs.get(key, 0) + 1
        return self.runs[key] - 1

    def _run(self) -> Iterator[None]:
        for s in self.stmts:
            yield from self._stmt(s)
        self._retire(0)

    def _stmt(self, s: S.Stmt) -> Iterator[None]:
        protocol = self.world.protocol(s)
        if isinstance(s, S.SeqStmt):
            for c in s.stmts:
                yield from self._stmt(c)
        elif isinstance(s, S.For) and protocol:
            start = self.value(s.min)
            for k in range(start, start + self.value(s.extent)):
                self.env[s.loop_var] = self.iteration = k
                yield from self._stmt(s.body)
        elif isinstance(s, S.IfThenElse) and protocol:
            branch = s.then_case if self.value(s.condition) else s.else_case
            if branch is not None:
                yield from self._stmt(branch)
        elif isinstance(s, (S.Allocate, S.LetStmt)):
            if isinstance(s, S.LetStmt) and protocol:  # a T.Persistent loop's tile and its coordinates
                self.env[s.var] = self.value(s.value)
            yield from self._stmt(s.body)
        elif isinstance(s, PROTOCOL):
            yield from getattr(self, "_" + type(s).__name__)(s)
        elif isinstance(s, S.BufferStore) and _counter(s.buffer):
            self.scalars[s.buffer] = self.value(s.value)
            self.env[s.buffer] = lambda _, buf=s.buffer: self.scalars[buf]
            yield
        else:
            assert not protocol, f"not modelled: {type(s).__name__}"
            named = {n.name for n in walk(s) if isinstance(n, Buffer)} & self.world.tiles.keys()
            assert not named, f"{self.name}: an access of {named} the simulation does not model"
            yield

    def _MbarWait(self, s: MbarWait) -> Iterator[None]:  # noqa: N802
        assert s.parity is not None, "warp-specialized rings compute their parity"
        bar = self.world.barriers[(s.ring, self.value(s.stage))]
        parity = self.value(s.parity)
        while not bar.passed(parity):
            yield

    def _MbarArrive(self, s: MbarArrive) -> Iterator[None]:  # noqa: N802
        # lane r of the warp arrives on block r's barrier (multicast kernels), else lane 0 on its own
        blocks = self.world.cluster[: s.cluster] if s.cluster > 1 else [self.world]
        for world in blocks:
            world.barriers[(s.ring, self.value(s.stage))].arrive(f"{self.name} ring {s.ring}")
        yield

    def _TmaCopy(self, s: TmaCopy) -> Iterator[None]:  # noqa: N802
        stage = self.value(s.stage)
        bar = self.world.barriers[(s.ring, stage)]
        bar.tx += s.bytes
        bar.arrive(f"{self.name} expect-tx")
        numbers = {
            name: self._count(("copy", name)) for name in dict.fromkeys(load.dst.name for load in s.loads)
        }
        rank = self.world.cluster.index(self.world) if self.world.cluster else 0
        for load in s.loads:
            number, offset = numbers[load.dst.name], self.value(load.dst_offset)
            nbytes = math.prod(load.box) * load.dst.dtype.bytes
            # a multicast slice lands in every block of the cluster, on its barrier at the same offset
            targets = self.world.cluster[: load.multicast] if load.multicast else [self.world]
            for world in targets:
                tile = world.stage_of(load.dst.name, offset, rank if load.multicast else 0)
                tile.iteration, tile.landed, tile.version = number, False, tile.version + 1
                tile.loop = self.iteration
                world.transfers.append((world.barriers[(s.ring, stage)], tile, nbytes))
        self.loaded += [(name, self.iteration) for name in numbers]
        yield

    def _GemmCall(self, s: GemmCall) -> Iterator[None]:  # noqa: N802
        reads = []
        for buf, offset in ((s.a, s.a_offset), (s.b, s.b_offset)):
            if buf.name in self.world.tiles:
                number = self._count((s.variant, s.a.name, s.b.name, s.c.name, buf.name))
                for tile in self.world.slices(buf.name, self.value(offset)):
                    assert tile.landed and tile.iteration == number, (
                        f"{self.name}: tile {number} of {buf.name}: {tile}"
                    )
                    reads.append((tile, number, tile.version))
                    self.consumed.append((buf.name, self.iteration, tile.loop))
        self.groups.append(reads)
        self._retire(s.wait if s.variant.startswith("wgmma") else 0)
        yield

    def _WgmmaWait(self, s: WgmmaWait) -> Iterator[None]:  # noqa: N802
        self._retire(s.pending)
        yield

    def _retire(self, pending: int) -> None:
        while len(self.groups) > pending:
            for tile, k, version in self.groups.pop(0):
                assert tile.version == version, f"{self.name}: tile {k} overwritten under a wgmma in flight"

    def _NamedBarrier(self, s: NamedBarrier) -> Iterator[None]:  # noqa: N802
        world = self.world
        generation = world.generations.get(s.barrier, 0)
        world.named[s.barrier] = world.named.get(s.barrier, 0) + 1
        if world.named[s.barrier] == world.warps:
            world.named[s.barrier], world.generations[s.barrier] = 0, generation + 1
        while world.generations.get(s.barrier, 0) == generation:
            yield


def _counter(buf: Buffer) -> bool:
    """A role's scalar counter of the iterations a guard takes (guards.counter)."""
    return buf.scope == COUNTER_SCOPE and buf.dtype.is_integer


def _roles(launch: S.KernelLaunch) -> tuple[S.Stmt, S.SeqStmt, list[S.Stmt]]:
    """The producer's program (its loop, with a guarded loop's counter), and the consumers' sequence
    holding the pipeline with its statements from the first to the last that takes part (a prologue, the
    loop, an epilogue; one tile: no loop at all)."""
    split = next(n for n in walk(launch.body) if isinstance(n, S.IfThenElse)
                 and any(isinstance(m, SetMaxNReg) and not m.increase for m in walk(n.then_case)))  # fmt: skip
    producer = next(n for n in walk(split.then_case) if isinstance(n, S.IfThenElse)).then_case
    rings = {n.ring for n in walk(producer) if isinstance(n, (TmaCopy, MbarWait))}
    tiles = {load.dst.name for n in walk(producer) if isinstance(n, TmaCopy) for load in n.loads}

    def takes_part(n) -> bool:
        if isinstance(n, (MbarWait, MbarArrive)):
            return n.ring in rings
        if isinstance(n, S.BufferStore):
            return _counter(n.buffer)
        return isinstance(n, WgmmaWait) or isinstance(n, GemmCall) and bool({n.a.name, n.b.name} & tiles)

    total = sum(takes_part(n) for n in walk(split.else_case))
    seqs = [n for n in _outside_loops(split.else_case) if isinstance(n, S.SeqStmt)
            and sum(takes_part(m) for c in n.stmts for m in walk(c)) == total]  # fmt: skip
    seq = seqs[-1]  # the innermost
    uses = [i for i, c in enumerate(seq.stmts) if any(takes_part(n) for n in walk(c))]
    return producer, seq, list(seq.stmts[uses[0] : uses[-1] + 1])


def _outside_loops(s: S.Stmt) -> Iterator[S.Stmt]:
    """The statements under `s` (pre-order) that no loop encloses."""
    yield s
    if isinstance(s, S.SeqStmt):
        for c in s.stmts:
            yield from _outside_loops(c)
    elif isinstance(s, (S.Allocate, S.LetStmt)):
        yield from _outside_loops(s.body)
    elif isinstance(s, S.IfThenElse):
        yield from _outside_loops(s.then_case)
        if s.else_case is not None:
            yield from _outside_loops(s.else_case)


def _consumer_loop(n) -> bool:
    return isinstance(n, S.For) and bool(S.annotation(n.annotations, PIPELINED_BUFFERS))


def _env(launch: S.KernelLaunch, where: S.Stmt, block: dict[str, int], memory: dict[str, np.ndarray]) -> dict:
    """The block indices, global `memory` (buffer name -> array), and the lets above `where` evaluated
    from them (the causal `loop_range`)."""
    env: dict = {v: block[v.name] for v in launch.block_vars if v.name in block}
    for buf in {n.buffer for n in walk(launch.body) if isinstance(n, E.BufferLoad) and n.buffer.name in memory}:
        env[buf] = lambda index, array=memory[buf.name]: array[tuple(index)]
    for var, value in enclosing_lets(launch.body, where).items():
        env[var] = evaluate(value, env)
    return env


def simulate(launch: S.KernelLaunch, block: dict[str, int], seed: int,
             memory: dict[str, np.ndarray] | None = None) -> list[Process]:  # fmt: skip
    """The producer and consumer warps of one block (`memory`: global arrays a guard reads, by name)."""
    return simulate_cluster(launch, [block], seed, memory)


class _Rank(Mutator):
    """The statements as block `rank` of its cluster runs them (%cluster_ctarank read)."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.rank = rank

    def mutate_Buffer(self, buf):
        return buf

    def mutate_Call(self, e: E.Call) -> E.Expr:
        return E.const(self.rank) if e.op == "cluster_ctarank" else self.generic_mutate(e)


def simulate_cluster(launch: S.KernelLaunch, blocks: list[dict[str, int]], seed: int,
                     memory: dict[str, np.ndarray] | None = None) -> list[Process]:  # fmt: skip
    """The blocks of one cluster (block r: rank r) run together: each a producer and its consumer warps,
    multicast loads landing in every block, releases arriving on every block's barrier. Returns the
    processes, each block's producer before its warps."""
    memory = memory or {}
    producer_loop, consumer_seq, consumer = _roles(launch)
    rings = {n.ring: (n.stages, n.arrivals) for n in walk(launch.body) if isinstance(n, MbarRing)}
    tiles, parts = {}, {}
    for copy in (n for n in walk(producer_loop) if isinstance(n, TmaCopy)):
        for load in copy.loads:
            tiles[load.dst.name] = math.prod(E.const_value(d) for d in load.dst.shape) // rings[copy.ring][0]
            if load.multicast:
                parts[load.dst.name] = load.multicast
    warps = (launch.threads[0] - PRODUCER_THREADS) // 32
    transfers: list = []
    worlds = [World(rings, tiles, warps, parts, transfers=transfers) for _ in blocks]
    procs = []
    for rank, (world, block) in enumerate(zip(worlds, blocks)):
        world.cluster = worlds if len(worlds) > 1 else []
        ranked = _Rank(rank)
        name = f"block {rank} " if len(worlds) > 1 else ""
        procs.append(Process(world, f"{name}producer", [ranked.mutate(producer_loop)],
                             _env(launch, producer_loop, block, memory)))  # fmt: skip
        procs += [Process(world, f"{name}warp {w}", [ranked.mutate(c) for c in consumer],
                          _env(launch, consumer_seq, block, memory)) for w in range(warps)]  # fmt: skip
    run_to_the_end(procs, transfers, seed, f"{blocks}, seed {seed}")
    per_block = 1 + warps
    for first in range(0, len(procs), per_block):  # both roles ran the same trip count in every block
        loaded = {key[1]: n for key, n in procs[first].runs.items()}
        for warp in procs[first + 1 : first + per_block]:
            assert {key[-1]: n for key, n in warp.runs.items()} == loaded, (warp.name, warp.runs, loaded)
    return procs


def run_to_the_end(procs: list[Process], transfers: list, seed: int, where: str) -> None:
    """Step the processes and land the transfers in a random order until all are done; a deadlock is an
    AssertionError naming the processes that never finish."""
    rng = random.Random(seed)
    for _ in range(10**6):
        live = [p for p in procs if not p.done]
        if not live and not transfers:
            return
        choice = rng.randrange(len(live) + len(transfers))
        if choice >= len(live):
            bar, tile, bytes_ = transfers.pop(choice - len(live))
            tile.landed = True
            bar.transfer(bytes_)
            continue
        try:
            next(live[choice].steps)
        except StopIteration:
            live[choice].done = True
    raise AssertionError(f"deadlock: {[p.name for p in procs if not p.done]} never finish ({where})")


KERNELS = {
    # name: (kernel, block indices to run: the causal loop's trip count is bx + 1)
    "attention": (lambda: attention(1, 2, 512, False), [{"bx": 0, "by": 0, "bz": 0}]),
    "attention-causal": (lambda: attention(1, 2, 512, True), [{"bx": b, "by": 1, "bz": 0} for b in range(4)]),
    "one-warpgroup": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["causal_one_warpgroup"]), [{"bx": 0}, {"bx": 3}]),
    "one-tile": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["one_tile_three_stages"]), [{"bx": 0}]),
    "p-shared": (lambda: AB.mha_fwd_bhsd(*AB.CONFIGS["p_shared"]), [{"bx": 1}]),  # named barriers in the loop
    # one stage per tile (TileLang's num_stages=1): the producer refills K and V each once released
    "one-stage": (lambda: AB.mha_fwd_bhsd(1, 2, 200, 64, True, 64, 64, 1, 128), [{"bx": 0}, {"bx": 3}]),
    # TileLang's bshd layout: 4-D boxes (attention_bshd.py), grouped heads, one stage
    "bshd-grouped": (lambda: AS.mha_fwd_bshd(*AS.CONFIGS["causal_grouped"]), [{"bx": 1, "by": 3}]),
    "bshd-one-stage": (lambda: AS.mha_fwd_bshd(*AS.CONFIGS["one_stage"]), [{"bx": 2, "bz": 0}]),
    # other one-stage loops of the conformance kit: register-A gemms (x loaded by the consumers), and a
    # softmax over one TMA-fed gemm whose row maxima go to a shared tile
    "register-a-one-stage": (R.fragment_a_from_global, [{"bx": 1}]),
    "decode-scores-one-stage": (D.decode_scores, [{}]),
    "gemm": (lambda: gemm(1000, 1032, 520, 128, 128, 64, 128, 3, "float16", "NT"), [{"bx": 0, "by": 0}]),
    "gemm-one-tile": (
        lambda: gemm(256, 256, 64, 128, 128, 64, 128, 3, "float16", "TN"),
        [{"bx": 0, "by": 0}],
    ),
    # one producer across a block's tiles (3 or 2 waves; 7 k-tiles on a ring of 3 stages)
    "persistent-gemm": (PT.persistent_gemm, [{"block": b} for b in range(PT.BLOCKS)]),
}
SEEDS = range(12)
OVERLAP = {"tilecraft.cuda.gemm_softmax_overlap": True}  # tests/cuda/test_overlap.py


@pytest.mark.parametrize("configs", [None, OVERLAP], ids=["", "overlap"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_the_protocol_runs_without_deadlock_or_stale_tiles(name, configs):
    make, blocks = KERNELS[name]
    launch = _launch(make(), configs)
    for block in blocks:
        for seed in SEEDS:
            simulate(launch, {"by": 0, "bz": 0} | block, seed)


class _Edit(Mutator):
    def __init__(self, edit) -> None:
        super().__init__()
        self.edit = edit

    def mutate_Buffer(self, buf):
        return buf

    def mutate_For(self, s: S.For) -> S.Stmt:
        return self.edit(s) if _consumer_loop(s) else self.generic_mutate(s)


def _flip_parities(loop: S.For) -> S.Stmt:
    body = [MbarWait(n.ring, n.stage, E.sub(1, n.parity)) if isinstance(n, MbarWait) else n
            for n in loop.body.stmts]  # fmt: skip
    return dataclasses.replace(loop, body=S.seq(*body))


def _release_first(loop: S.For) -> S.Stmt:
    stmts = list(loop.body.stmts)
    first = next(n for n in stmts if isinstance(n, MbarArrive))
    stmts.remove(first)
    return dataclasses.replace(loop, body=S.seq(stmts[0], first, *stmts[1:]))


def _release_in_flight(loop: S.For) -> S.Stmt:
    """The overlapped loop's release of V moved from after the wait for P @ V to right after its issue."""
    stmts = list(loop.body.stmts)
    wait = next(i for i, n in enumerate(stmts) if isinstance(n, WgmmaWait) and n.pending == 0)
    release = stmts.pop(wait + 1)
    issue = next(i for i, n in enumerate(stmts) if isinstance(n, GemmCall) and n.variant == "wgmma_rs")
    return dataclasses.replace(loop, body=S.seq(*stmts[: issue + 1], release, *stmts[issue + 1 :]))


class _NoReleaseAfterTheLoop(_Edit):
    """The T.Persistent pipeline without the release of each tile's last stage after its loop."""

    def mutate_SeqStmt(self, s: S.SeqStmt) -> S.Stmt:
        stmts = [self.mutate(c) for c in s.stmts]
        kept = [c for i, c in enumerate(stmts) if not (i and isinstance(stmts[i - 1], WgmmaWait)
                                                      and isinstance(c, (S.IfThenElse, MbarArrive)))]  # fmt: skip
        return S.seq(*kept)


def test_a_persistent_pipeline_needs_the_release_after_its_loop():
    """Without releasing the last stage of each tile the producer of the next tile waits for it forever."""
    launch = _NoReleaseAfterTheLoop(lambda loop: loop).mutate(_launch(PT.persistent_gemm()))
    with pytest.raises(AssertionError, match="deadlock"):
        simulate(launch, {"block": 0}, 0)


class _OneArrivalShort(_Edit):
    def mutate_MbarRing(self, s: MbarRing) -> S.Stmt:
        return dataclasses.replace(s, arrivals=s.arrivals + 1) if s.arrivals > 1 else s


@pytest.mark.parametrize(
    ("broken", "configs", "symptom"),
    [(_Edit(_flip_parities), None, "tile .* of|overwritten"), (_Edit(_release_first), None, "tile .* of|overwritten"),
     (_OneArrivalShort(lambda loop: loop), None, "deadlock"),
     (_Edit(_release_in_flight), OVERLAP, "overwritten under a wgmma in flight")],
    ids=["wrong-parity", "early-release", "arrival-count", "release-in-flight"],
)  # fmt: skip
def test_the_simulator_catches_a_broken_protocol(broken, configs, symptom):
    """The checks have teeth: with the consumers' parities flipped their first waits pass at once and a
    gemm reads a tile still in flight; with K released before its gemm the producer refills the stage
    under it; with an empty barrier expecting one arrival more than there are warps the producer waits
    forever; with the overlap's V released before P @ V has completed the producer refills it under
    the wgmma."""
    launch = broken.mutate(_launch(attention(1, 2, 512, False), configs))
    with pytest.raises(AssertionError, match=symptom):
        for seed in SEEDS:
            simulate(launch, {"bx": 0, "by": 0, "bz": 0}, seed)


# ---------------------------------------------------------------- thread-block clusters (TMA multicast)

MULTICAST = {"tilecraft.cuda.tma_multicast": True}
CLUSTERS = {
    # name: (kernel, the blocks of one cluster, rank order)
    "sharing-a": (CL.sharing_a, [{"bx": 4, "by": 3}, {"bx": 5, "by": 3}]),  # bx 5 holds no output column
    "sharing-b": (CL.sharing_b, [{"bx": 2, "by": 2}, {"bx": 2, "by": 3}]),
    "four-blocks": (lambda: cluster_gemm(1000, 1032, 520, (256, 128, 64, 256, 4), "float16", "TN", (4, 1)),
                    [{"bx": b, "by": 1} for b in range(4, 8)]),  # fmt: skip
    "swizzled": (lambda: cluster_gemm(520, 2056, 328, (256, 128, 64, 256, 4), "float16", "NN", (2, 1), panel=3),
                 [{"bx": 6, "by": 1}, {"bx": 7, "by": 1}]),  # fmt: skip
}


@pytest.mark.parametrize("name", list(CLUSTERS))
def test_multicast_clusters_run_without_deadlock_or_stale_slices(name):
    """Every block of the cluster gets each slice of the shared tile from its peer before its gemm reads
    it, and no producer refills a stage a peer's wgmmas still read."""
    make, blocks = CLUSTERS[name]
    launch = _launch(make(), MULTICAST)
    assert any(isinstance(n, TmaCopy) and any(load.multicast for load in n.loads) for n in walk(launch.body))
    for seed in SEEDS:
        simulate_cluster(launch, [{"bz": 0} | b for b in blocks], seed)


class _LocalRelease(Mutator):
    """Each consumer warp releases the stage only to its own block's producer."""

    def mutate_Buffer(self, buf):
        return buf

    def mutate_MbarArrive(self, s: MbarArrive) -> S.Stmt:
        return dataclasses.replace(s, cluster=0)


class _CountOneBlock(_Edit):
    """Empty barriers that count one block's consumer warps."""

    def mutate_MbarRing(self, s: MbarRing) -> S.Stmt:
        return dataclasses.replace(s, arrivals=s.arrivals // 2) if s.arrivals > 1 else s


@pytest.mark.parametrize(("broken", "symptom"), [(_LocalRelease(), "deadlock"),
                                                 (_CountOneBlock(lambda loop: loop), "overwritten|beyond the barrier's count")],
                         ids=["local-release", "one-block-count"])  # fmt: skip
def test_the_simulator_catches_a_broken_cluster_protocol(broken, symptom):
    """With releases that stay in their block the producers wait for the peers' arrivals forever; with
    empty barriers counting one block's warps a producer refills a stage once its own block (or the
    faster half of the arrivals) released it, under a peer's wgmmas, or the peers' arrivals overrun the
    phase."""
    launch = broken.mutate(_launch(CL.sharing_a(), MULTICAST))
    with pytest.raises(AssertionError, match=symptom):
        for seed in SEEDS:
            simulate_cluster(launch, [{"bx": 0, "by": 0, "bz": 0}, {"bx": 1, "by": 0, "bz": 0}], seed)


# ---------------------------------------------------------------- guarded loops (block-sparse kernels)

def _slots(mask: np.ndarray) -> np.ndarray:
    """NSA's form of a mask: a taken slot holds a key block (its own number), a skipped one -1."""
    return np.where(mask, np.arange(mask.shape[-1], dtype=np.int32), np.int32(-1))


GEMM_ROW = lambda b, k: (b["by"], b["bx"], k)  # noqa: E731
ATTENTION_ROW = lambda b, k: (b["bz"], b["by"], b["bx"], k)  # noqa: E731
GUARDED = {
    # name: (kernel, the mask's shape, its index of a block and iteration, the memory the kernel reads
    # for a mask)
    "gemm": (BS.build_gemm("example"), (3, 3, 13), GEMM_ROW, None),
    "gemm-three-stages": (BS.build_gemm("three_stages"), (5, 3, 7), GEMM_ROW, None),
    "attention": (BS.attention, (1, 2, 5, 5), ATTENTION_ROW, None),
    # a let reads the slot's key block, the guard skips -1, the TMA coordinates come from the let
    "selected-attention": (BS.selected_attention, (1, 2, 5, BS.SELECTED), ATTENTION_ROW, _slots),
}


def _masks(shape) -> dict[str, np.ndarray]:
    """Masks over the iterations of the block (0, 0, ...): the edges of the taken count, and random ones."""
    n = shape[-1]
    rows = {"none": np.zeros(n, bool), "all": np.ones(n, bool), "first": np.arange(n) == 0,
            "last": np.arange(n) == n - 1, "middle": np.arange(n) == n // 2,
            "alternate": np.arange(n) % 2 == 1, "all-but-first": np.arange(n) > 0}  # fmt: skip
    rng = np.random.default_rng(29)
    rows |= {f"random-{i}": rng.random(n) < p for i, p in enumerate((0.2, 0.5, 0.5, 0.8))}
    masks = {}
    for name, row in rows.items():
        mask = rng.random(shape) < 0.5  # other blocks' rows: the simulation reads only its block's
        mask[(0,) * (len(shape) - 1)] = row
        masks[name] = mask
    return masks


@pytest.mark.parametrize("name", list(GUARDED))
def test_a_guarded_pipeline_loads_and_consumes_each_taken_iteration_once(name):
    """Producer and consumers count the iterations the mask takes and run the ring on that count: no
    deadlock, no stale or overwritten tile, and each staged tile of a taken iteration is loaded once and
    read by every consumer warp in that same iteration, for masks taking none, all, one (first, middle,
    last) and random sets of the iterations (GEMM schedule, general schedule, and a let above the guard)."""
    make, shape, index, memory = GUARDED[name]
    launch = _launch(make())
    staged = {load.dst.name for n in walk(launch.body) if isinstance(n, TmaCopy) for load in n.loads} - {"Q_shared"}
    block = dict.fromkeys(("bx", "by", "bz"), 0)
    for mask_name, mask in _masks(shape).items():
        taken = [k for k in range(shape[-1]) if mask[index(block, k)]]
        for seed in range(4):
            procs = simulate(launch, block, seed, {"BlockMask": mask if memory is None else memory(mask)})
            producer, warps = procs[0], procs[1:]
            for buf in staged:
                loaded = [k for b, k in producer.loaded if b == buf]
                assert loaded == taken, (mask_name, buf, loaded, taken)
                for warp in warps:
                    reads = [(k, tile) for b, k, tile in warp.consumed if b == buf]
                    assert [k for k, _ in reads] == taken, (mask_name, warp.name, buf, reads)
                    assert all(k == tile for k, tile in reads), (mask_name, warp.name, buf, reads)


class _ProducerIgnoresTheGuard(Mutator):
    """The producer loads every iteration (its guard always true)."""

    def mutate_Buffer(self, buf):
        return buf

    def mutate_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        s = self.generic_mutate(s)
        loads = any(isinstance(n, TmaCopy) for n in walk(s.then_case))
        reads_mask = any(isinstance(n, E.BufferLoad) and n.buffer.name == "BlockMask" for n in walk(s.condition))
        return dataclasses.replace(s, condition=E.const(True)) if loads and reads_mask else s


class _ConsumersCountEveryIteration(_Edit):
    """The consumers' ring runs on k (the counter bumped before the guard, every iteration)."""

    def mutate_For(self, s: S.For) -> S.Stmt:
        if not _consumer_loop(s):
            return self.generic_mutate(s)
        guard = s.body
        let = guard.then_case
        count = next(n for n in walk(let) if isinstance(n, S.BufferStore) and _counter(n.buffer))
        rest = S.seq(*(c for c in let.body.stmts if c is not count))
        taken = dataclasses.replace(let, body=rest)
        bump = S.BufferStore(count.buffer, E.add(E.BufferLoad(count.buffer.dtype, count.buffer, (E.const(0),)), 1),
                             (E.const(0),))  # fmt: skip
        return dataclasses.replace(s, body=S.seq(dataclasses.replace(guard, then_case=taken), bump))


@pytest.mark.parametrize("broken", [_ProducerIgnoresTheGuard(), _ConsumersCountEveryIteration(lambda loop: loop)],
                         ids=["producer-loads-all", "consumers-count-k"])  # fmt: skip
def test_the_simulator_catches_a_broken_guarded_protocol(broken):
    """A producer that loads skipped iterations too fills the ring with tiles nobody consumes (the
    consumers read the wrong iteration's tile, or the producer waits forever for a stage); consumers whose
    ring runs on k rather than on the taken count wait for stages no tile goes to."""
    launch = broken.mutate(_launch(BS.build_gemm("example")()))
    mask = _masks((3, 3, 13))["random-1"]
    with pytest.raises(AssertionError, match="deadlock|tile .* of|!="):
        for seed in SEEDS:
            procs = simulate(launch, {"bx": 0, "by": 0, "bz": 0}, seed, {"BlockMask": mask})
            for warp in procs[1:]:
                assert all(k == tile for _, k, tile in warp.consumed), f"{warp.consumed} != its iterations"
