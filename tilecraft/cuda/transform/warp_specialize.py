"""Warp specialization of TMA pipelines (sm_90a): a producer warpgroup issues the loads.

Which loops: the only `T.Pipelined` loop of a kernel (num_stages >= 1, counting from 0, as
normalize-pipelined-loops makes every one) whose tiles are
all loaded by unconditional TMA copies at the top level of its body (no cp.async, no tile loaded by the
threads' own loads, no tile filled by two copies), at the kernel's top level (below its lets,
allocations and layout annotations, not inside another loop or branch), in a kernel of 128 or 256
threads in one dimension, whose trip count and TMA coordinates the producer can compute alone. The
body is either only TMA copies and wgmma gemms of shared operands (the GEMM's schedule, num_stages >=
2: a stage is released when the next one's wgmmas are issued) or has other code too (flash attention's
softmax between its gemms: the general schedule, which releases each tile after its last reader, so one
stage per tile overlaps too: V(k) loads during Q @ K(k)^T and the softmax, K(k+1) during P @ V(k), as
TileLang's warp specialization does at num_stages=1), whose statements must not write a loaded tile nor
read one before its copy. Anything else keeps the pipeline without a
producer, with a note on stderr under TILECRAFT_VERBOSE saying why (`specialization_candidate`).

inject-software-pipeline builds the two halves of such a loop (`ProducerLoop`, then the consumer loop);
the `warp-specialize` pass, after barrier insertion, gives them their threads. The kernel gets one more
warpgroup after the `threads` it was written for, so the thread indices user code reads keep their
meaning. The statement sequence holding the loop becomes `if (tx >= threads) producer else consumer`:

- producer (the extra warpgroup): `setmaxnreg.dec`, then its first thread alone runs every tile k:
  wait until stage k % s is empty, announce the tile's bytes on the stage's full barrier and issue its
  boxes (GEMM: one barrier pair for all the stage's copies; general: one pair per copy, in the body's
  order, so a consumer waiting for the first tile does not wait for the later ones);
- consumer (the kernel's own threads): `setmaxnreg.inc`, then all the kernel's other code (the
  accumulator's clear before the loop, the epilogue after it) and the consumer loop. GEMM: wait for
  the stage's full barrier, issue the wgmmas leaving one group in flight, then release the previous
  stage (its group has completed) with one arrival per warp on its empty barrier. General: the body as
  written, each TMA copy replaced by the wait for its tile, each tile released right after the last
  statement that reads it (its gemms complete in place). Barriers among consumers are
  `bar.sync 1, threads`, so the producer is never waited for; neither main loop has a block barrier.

Where the consumers' code after the pipeline (the epilogue) allocates a shared tile (a TMA store's
staging tile), it runs after the branch instead, guarded by the consumers' thread range, and the
producer warpgroup returns at the end of its branch: the stage tiles' scope then ends with the branch,
so the epilogue's tile may take their bytes (4 stages of 256x128x64 and a C_shared tile fit), and no
register of the epilogue stays live on the producer's path. Not in T.Persistent (the producer loads
the next tile's stages during the epilogue) nor where the kernel multicasts (every thread reaches its
final cluster barrier).

The lets between the split and the loop (TileLang's causal `loop_range`) stay in the consumer branch;
the producer, split off above them, takes their values inlined (`enclosing_lets`), so both run the same
trip count.

Phases: tile k is the (k / s)-th use of its stage, so the consumers wait for the full-barrier phase of
parity (k / s) % 2 and the producer for the empty-barrier phase of parity (k / s + 1) % 2, the phase
before: in the first round the barrier is still in its first phase, and a wait for the parity of the
phase before the current one returns at once (CUTLASS starts its producer at phase 1 for this reason).
Neither side can run a whole phase ahead of the other, so one parity bit tells the phases apart.
"""

from __future__ import annotations

import dataclasses

from tilecraft import settings
from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import (
    MIN_BLOCKS_PER_SM,
    AsyncCopy,
    GemmCall,
    NamedBarrier,
    ProducerExit,
    ProducerLoop,
    SetMaxNReg,
    TmaCopy,
    VectorCopy,
    WgmmaWait,
    shared_accesses,
)
from tilecraft.cuda.transform.guards import guard_refusal, loop_body, statement_path
from tilecraft.cuda.transform.multicast import multicasts
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, free_vars, map_launches, substitute, walk
from tilecraft.transform.simt.barriers import SHARED, Accesses, is_sync

# The general schedule (loops with code between their TMA-fed gemms): on by default; False switches it
# off (its results and speed on an H200: benchmarks/RESULTS.md, 2026-12-01).
GENERAL = "tilecraft.cuda.warp_specialize_general"
PRODUCER_THREADS = 128  # one warpgroup: setmaxnreg applies to whole warpgroups
CONSUMER_THREADS = (128, 256)  # one or two consumer warpgroups (SPLITS)
REGISTERS_PER_SM = 65536
CONSUMER_BARRIER = 1  # named barrier 0 is __syncthreads


@dataclasses.dataclass(frozen=True)
class RegisterSplit:
    """Registers per thread after setmaxnreg, and the blocks per SM the launch bounds promise.

    With `__launch_bounds__(threads, min_blocks)` ptxas gives every thread of a kernel that runs
    setmaxnreg the most registers that fit (`entry_registers`); the producer releases registers into the
    block's pool and the consumers take them from it, so producer + consumers must fit what the block
    got at launch (PTX ISA, setmaxnreg: a per-CTA pool; `.inc` blocks until the pool has enough).
    """

    producer: int
    consumer: int
    min_blocks: int


# One consumer warpgroup: two blocks per SM, as the kernel has without a producer (128 registers at entry,
# 24 + 232 = 2 x 128). Two: one block of 384 threads at 168 (40 + 2 x 232 = 3 x 168, as CUTLASS does).
SPLITS = {1: RegisterSplit(24, 232, 2), 2: RegisterSplit(40, 232, 1)}
# Consumers that run other code between their gemms (flash attention: the S and O accumulators, the
# 16-bit P tile and the softmax's row values live together) take the most the pool allows: two
# warpgroups 240 with the producer at the minimum, 24 + 2 x 240 = 3 x 168 (FA3 and TileLang's split);
# the producer computes only coordinates and barrier addresses, which fit (ptxas reports no spills).
GENERAL_SPLITS = {1: RegisterSplit(24, 232, 2), 2: RegisterSplit(24, 240, 1)}


# One consumer warpgroup whose per-thread arrays do not fit the two-block split (an fp8 GEMM's two
# accumulators, a decode kernel's 128-row O tile beside S and P) takes the one-block split instead, as
# TileLang does for every warp-specialized kernel: 240 registers, the most setmaxnreg gives a thread
# that ptxas can use; under 232 such consumers spill (ptxas -v on example_mha_inference: 384 bytes at
# 232 with the gemm-softmax overlap, 20 without; none at 240 without the overlap).
ONE_BLOCK = RegisterSplit(24, 240, 1)
# Registers a consumer thread needs beside its arrays: addresses, loop counters, wgmma descriptors and
# barrier phases (the flash kernels' ptxas -v: 10-20 more than their fragments).
REGISTER_MARGIN = 16
PER_THREAD_SCOPES = ("local", "local.fragment", "local.var")


def array_registers(body: S.Stmt) -> int:
    """32-bit registers per thread that the per-thread arrays allocated in `body` take, all counted live
    at once (after lower-to-threads a fragment is a per-thread array); arrays of unknown size count 0."""
    total = 0
    for n in walk(body):
        if isinstance(n, S.Allocate) and n.buffer.scope in PER_THREAD_SCOPES:
            total += _elements(n.buffer) * n.buffer.dtype.bytes
    return -(-total // 4)


def _elements(buf: Buffer) -> int:
    """The elements of a buffer of constant shape; 0 where an extent is not constant."""
    elements = 1
    for dim in buf.shape:
        value = E.const_value(dim)
        elements *= value if isinstance(value, int) else 0
    return elements


def tile_array_registers(body: S.Stmt) -> int:
    """`array_registers` of a kernel before lower-to-threads: each fragment takes its layout's registers
    (the AnnotateLayout infer-layouts gave it), the other per-thread arrays their elements."""
    layouts = {id(n.buffer): n.layout for n in walk(body) if isinstance(n, S.AnnotateLayout)}
    total = 0
    for n in walk(body):
        if not isinstance(n, S.Allocate) or n.buffer.scope not in PER_THREAD_SCOPES:
            continue
        layout = layouts.get(id(n.buffer))
        elements = getattr(layout, "num_registers", None)
        if elements is None:
            elements = _elements(n.buffer)
        total += elements * n.buffer.dtype.bytes
    return -(-total // 4)


def room_for_producer(registers: int) -> bool:
    """Consumers whose arrays take `registers` a thread fit beside a producer warpgroup (ONE_BLOCK's)."""
    return registers + REGISTER_MARGIN <= ONE_BLOCK.consumer


def register_split(consumer_threads: int, general: bool, registers: int) -> RegisterSplit:
    """The split for a kernel whose consumers hold `registers` (array_registers) in their arrays."""
    split = (GENERAL_SPLITS if general else SPLITS)[consumer_threads // PRODUCER_THREADS]
    if split.min_blocks > 1 and registers + REGISTER_MARGIN > split.consumer:
        return ONE_BLOCK
    return split


def entry_registers(threads: int, min_blocks: int) -> int:
    """The registers per thread ptxas gives a kernel that runs setmaxnreg under `__launch_bounds__(threads,
    min_blocks)`: all that fit, in units of 8 (ptxas -v says so for the SPLITS launches, 256 x 2 and
    384 x 1; the nvcc tests check every specialized gemm against it)."""
    return REGISTERS_PER_SM // (threads * min_blocks) // 8 * 8


# ---------------------------------------------------------------- which loops


def specialization_candidate(
    launch: S.KernelLaunch, general: bool = False
) -> tuple[S.For | None, str | None]:
    """The kernel's pipelined loop and why it cannot get a producer warpgroup (None: it can); (None,
    None) when the kernel has no pipelined loop. `general` allows the general schedule (pass config
    GENERAL, on by default)."""
    loops = [n for n in walk(launch.body) if isinstance(n, S.For) and n.kind is S.ForKind.PIPELINED]
    if not loops:
        return None, None
    loop = loops[0]
    reason = (
        _threads_refusal(launch)
        or _count_refusal(loops)
        or guard_refusal(launch, loop)  # the producer evaluates the loop's lets and guard alone
        or _loop_refusal(loop, general)
        or _producer_refusal(loop, launch)
        or _placement_refusal(launch.body, loop, launch)
    )
    return loop, reason


def _threads_refusal(launch: S.KernelLaunch) -> str | None:
    if len(launch.threads) != 1 or len(launch.thread_vars) != 1 or launch.threads[0] not in CONSUMER_THREADS:
        return f"threads={launch.threads} (a producer is added to 128 or 256 threads in one dimension)"
    return None


def _count_refusal(loops: list[S.For]) -> str | None:
    if len(loops) > 1:
        return f"the kernel has {len(loops)} T.Pipelined loops (a producer serves a kernel's only one)"
    return None


def _loop_refusal(loop: S.For, general: bool) -> str | None:
    stages = S.annotation(loop.annotations, "num_stages") or 0
    if stages < 1 or E.const_value(loop.min) != 0:
        return f"num_stages={stages} (a producer needs at least 1 stage) or the loop does not start at 0"
    stmts = loop_statements(loop)
    nested = [n for s in stmts if not isinstance(s, TmaCopy) for n in walk(s) if isinstance(n, TmaCopy)]
    if nested:
        return "a TMA copy of the loop is under a condition or in a loop"
    if any(isinstance(n, AsyncCopy) for n in walk(loop.body)):
        return "a copy of the loop is not a TMA load (cp.async)"
    if not any(isinstance(s, TmaCopy) for s in stmts):
        return "the loop has no TMA load"
    loaded = _loaded_by_threads(loop.body)
    if loaded is not None:
        return f"a copy of the loop is not a TMA load ({loaded} is loaded from global memory by the threads)"
    refilled = _refilled(stmts)
    if refilled is not None:
        return f"two copies of the loop fill {refilled} (a stage holds one tile)"
    if gemms_only(stmts):
        if stages < 2:
            # a stage is released once the next one's wgmmas are issued, so one stage would wait on itself
            return "num_stages=1 in a loop of TMA loads and gemms only (the GEMM schedule needs at least 2 stages)"
        return None
    if not general:
        return (
            "the loop has other code than TMA loads and gemms, and the general schedule of warp "
            f"specialization (flash attention's) is switched off ({GENERAL}=False)"
        )
    return consumer_refusal(stmts)


def _refilled(stmts: list[S.Stmt]) -> str | None:
    seen: set[int] = set()
    for s in stmts:
        tiles = {id(load.dst): load.dst for load in s.loads} if isinstance(s, TmaCopy) else {}
        for key, buf in tiles.items():
            if key in seen:
                return buf.name
            seen.add(key)
    return None


def _loaded_by_threads(body: S.Stmt) -> str | None:
    """A shared buffer the loop fills from global memory with the threads' own loads (a T.copy that
    could not be a TMA load): the consumers would still load tiles and meet at a barrier for each, so
    a producer would take no loading off them."""
    for n in walk(body):
        if isinstance(n, VectorCopy) and n.dst.scope in SHARED and n.src.scope == "global":
            return n.dst.name
        stored = isinstance(n, S.BufferStore) and n.buffer.scope in SHARED
        if stored and any(isinstance(m, E.BufferLoad) and m.buffer.scope == "global" for m in walk(n.value)):
            return n.buffer.name
    return None


def loop_statements(loop: S.For) -> list[S.Stmt]:
    """The statements of the loop's body below its lets and guard (guards.loop_body)."""
    return list(loop_body(loop).stmts)


def gemms_only(stmts: list[S.Stmt]) -> bool:
    """The loop is TMA loads and wgmma gemms of shared operands only: the GEMM's schedule, whose gemms
    stay in flight across iterations (inject-software-pipeline `_specialized`)."""
    return all(isinstance(s, TmaCopy) or (isinstance(s, GemmCall) and s.variant == "wgmma") for s in stmts)


def tile_accesses(s: S.Stmt) -> tuple[set[int], set[int]]:
    """The shared buffers `s` reads and writes (ids), CUDA statements included."""
    return Accesses(set(), shared_accesses)(s)


def consumer_refusal(stmts: list[S.Stmt]) -> str | None:
    """A loop with other code (the general schedule: each copy's tile is waited for where the copy
    stood and released after its last reader) needs every loaded tile written by its copy alone and
    read only after it in the body: a read before the copy would want the previous iteration's tile,
    which the producer may already have overwritten."""
    copied = {id(load.dst): (pos, load.dst.name) for pos, s in enumerate(stmts) if isinstance(s, TmaCopy)
              for load in s.loads}  # fmt: skip
    for pos, s in enumerate(stmts):
        if isinstance(s, TmaCopy):
            continue
        reads, writes = tile_accesses(s)
        written = [copied[buf][1] for buf in writes & copied.keys()]
        if written:
            return f"the loop's code writes {written[0]}, a tile it loads by TMA{_line(s)}"
        early = [copied[buf][1] for buf in reads & copied.keys() if copied[buf][0] > pos]
        if early:
            return f"the loop reads {early[0]} before its TMA copy{_line(s)}"
    return None


def _producer_refusal(loop: S.For, launch: S.KernelLaunch) -> str | None:
    """The producer computes the trip count and the tiles' coordinates alone: they may use the loop,
    block and kernel variables and values bound from them (the causal loop's `loop_range`), not the
    thread index or on-chip values the consumers compute."""
    copies = [s for s in walk(loop.body) if isinstance(s, TmaCopy)]
    exprs = [loop.extent, *(c for copy in copies for load in copy.loads for c in load.coords)]
    exprs = substitute(tuple(exprs), enclosing_lets(launch.body, loop))
    threads = {id(v) for v in launch.thread_vars}
    if any(id(v) in threads for v in free_vars(tuple(exprs))):
        return "the TMA coordinates depend on the thread index"
    if any(isinstance(n, E.BufferLoad) and n.buffer.scope != "global" for e in exprs for n in walk(e)):
        return "the TMA coordinates read on-chip values"
    tiles = {id(load.dst) for copy in copies for load in copy.loads}
    outside = [n for n in walk(launch.body) if _uses(n, tiles) and not _inside(n, loop)]
    if outside:
        return "a tile the loop loads is also used outside the loop"
    return None


def _uses(n, tiles: set[int]) -> bool:
    if isinstance(n, (E.BufferLoad, S.BufferStore)):
        return id(n.buffer) in tiles
    found = shared_accesses(n)
    return found is not None and any(id(buf) in tiles for buf in (*found[0], *found[1]))


def _inside(n, loop: S.For) -> bool:
    return any(m is n for m in walk(loop.body))


def enclosing_lets(body: S.Stmt, target: S.Stmt) -> dict[E.Var, E.Expr]:
    """The values of the LetStmts from `body` down to `target` in terms of the variables above `body`
    (each outer value substituted into the inner ones). The producer runs above the lets that the split
    leaves in the consumers' branch, so its trip count and coordinates take these values inlined."""
    values: dict[E.Var, E.Expr] = {}
    for s in statement_path(body, target) or ():
        if isinstance(s, S.LetStmt):
            values[s.var] = substitute(s.value, values)
    return values


def _placement_refusal(body: S.Stmt, loop: S.For, launch: S.KernelLaunch) -> str | None:
    persistent = persistent_loop(body, loop)
    if persistent is not None:
        return _persistent_refusal(body, persistent, loop, launch)
    found = split_point(body, lambda s: s is loop)
    if found is None:
        return (
            "the loop is inside another loop or a branch (only the kernel's top-level code is split, "
            "or a T.Persistent loop at its top level)"
        )
    return None


def persistent_loop(body: S.Stmt, loop: S.Stmt) -> S.For | None:
    """The T.Persistent loop around `loop`, if the loop is in one."""
    for s in statement_path(body, loop) or ():
        if isinstance(s, S.For) and S.annotation(s.annotations, S.PERSISTENT) and s is not loop:
            return s
    return None


def _persistent_refusal(body: S.Stmt, persistent: S.For, loop: S.For, launch: S.KernelLaunch) -> str | None:
    """A pipelined loop in a T.Persistent loop keeps one producer across the tiles when the persistent
    loop is split like a top-level loop, the path down to the pipelined loop is sequences and lets, the
    loop is a GEMM's (its stages are released in its own iteration or right after it) and its trip count
    is the same for every tile: the ring's use count of wave w's iteration k is then w * n + k, which a
    branch skipping the loop for some tiles would break."""
    if split_point(body, lambda s: s is persistent) is None:
        return "the T.Persistent loop around it is inside another loop or a branch"
    inner = statement_path(persistent.body, loop) or []
    if any(isinstance(s, S.For) and s is not loop for s in inner):
        return "the loop is inside another loop within the T.Persistent loop"
    if any(isinstance(s, S.IfThenElse) for s in inner):
        return "the loop is in a branch within the T.Persistent loop (the ring counts every tile's trips)"
    if loop_body(loop).guarded:
        return "its copies are under a condition (the ring within T.Persistent counts every tile's trips)"
    if not gemms_only(loop_statements(loop)):
        return "inside T.Persistent only a GEMM's loop (TMA loads and wgmma gemms) keeps its producer"
    bound = {id(s.var) for s in inner if isinstance(s, S.LetStmt)} | {id(persistent.loop_var)}
    if any(id(v) in bound for v in free_vars(loop.extent)):
        return "the loop's trip count differs between the tiles of the T.Persistent loop"
    return None


def _line(s: S.Stmt) -> str:
    return f" (line {s.span.line})" if s.span is not None else ""


def note(loop: S.For, reason: str, what: str = "T.Pipelined loop is not warp-specialized") -> None:
    """The TILECRAFT_VERBOSE note of a pipelined loop that keeps the pipeline without a producer (or,
    `what`, another schedule it does not get)."""
    settings.verbose_note(loop.span, f"{what}: {reason}")


# ---------------------------------------------------------------- where the kernel splits


def _inert(s: S.Stmt) -> bool:
    """Statements every thread may run before the split: barriers, layout annotations, nothing."""
    if isinstance(s, S.SeqStmt):
        return all(_inert(c) for c in s.stmts)
    return is_sync(s) or isinstance(s, S.AnnotateLayout)


def _holds(s: S.Stmt, is_target) -> bool:
    return any(is_target(n) for n in walk(s) if isinstance(n, S.Stmt))


def split_point(body: S.Stmt, is_target) -> S.Stmt | None:
    """The statement the producer / consumer branch replaces: below the kernel's lets, allocations and
    inert statements, the first sequence with other code beside the target (or the target itself);
    from there to the target, sequences only. None where the target sits in a loop, a branch or a
    scope below other code."""
    node = body
    while not is_target(node):
        if isinstance(node, (S.LetStmt, S.Allocate)):
            node = node.body
            continue
        if not isinstance(node, S.SeqStmt):
            return None
        holders = [c for c in node.stmts if _holds(c, is_target)]
        if len(holders) != 1:
            return None
        if all(c is holders[0] or _inert(c) for c in node.stmts):
            node = holders[0]
            continue
        return node if _through_sequences(holders[0], is_target) else None
    return node


def _through_sequences(s: S.Stmt, is_target) -> bool:
    """From the split to the target: sequences, lets (the producer takes their values inlined) and
    allocations (lifted above the split)."""
    if is_target(s):
        return True
    if isinstance(s, (S.LetStmt, S.Allocate)):
        return _through_sequences(s.body, is_target)
    return isinstance(s, S.SeqStmt) and any(_through_sequences(c, is_target) for c in s.stmts)


# ---------------------------------------------------------------- the pass


def _without(s: S.Stmt, producer: ProducerLoop) -> S.Stmt:
    if s is producer:
        return S.SeqStmt(())
    if isinstance(s, S.SeqStmt):
        return S.seq(*(_without(c, producer) for c in s.stmts))
    if isinstance(s, (S.LetStmt, S.Allocate, S.For)):  # a For: the T.Persistent loop around the producer
        return dataclasses.replace(s, body=_without(s.body, producer))
    return s


def _producer_path(s: S.Stmt, producer: ProducerLoop) -> S.Stmt:
    """The producer's program in a T.Persistent loop: the loop and the lets from `s` down to the
    producer loop, with the producer loop's body where it stood and nothing else."""
    if s is producer:
        return producer.body
    if isinstance(s, S.SeqStmt):
        return next(_producer_path(c, producer) for c in s.stmts if _holds(c, lambda n: n is producer))
    if isinstance(s, S.Allocate):
        return _producer_path(s.body, producer)
    return dataclasses.replace(s, body=_producer_path(s.body, producer))  # a For or a LetStmt


class _ConsumerBarriers(BufferKeepingMutator):
    """Block barriers of the consumer half become barriers among the consumers."""

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads

    def mutate_Evaluate(self, s: S.Evaluate) -> S.Stmt:
        return NamedBarrier(CONSUMER_BARRIER, self.threads, span=s.span) if is_sync(s) else s


class _Replace(BufferKeepingMutator):
    def __init__(self, old: S.Stmt, new: S.Stmt) -> None:
        super().__init__()
        self.old, self.new = old, new

    def mutate(self, node):
        return self.new if node is self.old else super().mutate(node)


def _specialize(launch: S.KernelLaunch) -> S.KernelLaunch:
    producers = [n for n in walk(launch.body) if isinstance(n, ProducerLoop)]
    if not producers:
        return launch
    producer = producers[0]
    # in a T.Persistent loop the producer runs that loop too (the split is placed above it)
    persistent = persistent_loop(launch.body, producer)
    outermost = producer if persistent is None else persistent
    point = split_point(launch.body, lambda s: s is outermost)
    assert point is not None, "inject-software-pipeline made a producer loop the split cannot place"
    threads = producer.consumer_threads
    split = register_split(threads, producer.general, array_registers(launch.body))
    tx = launch.thread_vars[0]
    # the lets between the split and the loop stay in the consumers' branch: the producer inlines them
    body = producer.body if persistent is None else _producer_path(persistent, producer)
    body = substitute(body, enclosing_lets(point, outermost))
    issue = S.IfThenElse(E.compare(E.EQ, tx, threads), body)  # the producer's first thread
    # both branches use the stage tiles, so their allocations must enclose the split (narrow-shared-scopes
    # may have placed them below other code of the split statement)
    lifted: list[S.Allocate] = []
    consume = _ConsumerBarriers(threads).mutate(_without(_strip(point, producer, lifted), producer))
    # a multicast kernel's blocks meet at a cluster barrier at its end, which every thread must reach
    apart = persistent is None and not multicasts(producer.body)
    head, tail = _after_the_pipeline(consume, producer) if apart else (consume, None)
    branch = S.IfThenElse(
        E.compare(E.GE, tx, threads),
        S.seq(SetMaxNReg(split.producer, False), issue, *([] if tail is None else [ProducerExit()])),
        S.seq(SetMaxNReg(split.consumer, True), head),
        span=producer.span,
    )
    replaced = _wrap(branch, lifted) if tail is None else _split_scopes(branch, tail, lifted, tx, threads)
    return dataclasses.replace(
        launch,
        body=_Replace(point, replaced).mutate(launch.body),
        threads=(threads + PRODUCER_THREADS,),
        annotations=(*launch.annotations, (MIN_BLOCKS_PER_SM, split.min_blocks)),
    )


def _strip(s: S.Stmt, producer: ProducerLoop, lifted: list[S.Allocate]) -> S.Stmt:
    """`s` without the allocations on its path down to the producer (appended to `lifted`, outermost
    first), which the split re-wraps around what uses them."""
    if not _holds(s, lambda n: n is producer):
        return s
    if isinstance(s, S.Allocate):
        lifted.append(s)
        return _strip(s.body, producer, lifted)
    if isinstance(s, S.LetStmt):
        return dataclasses.replace(s, body=_strip(s.body, producer, lifted))
    if isinstance(s, S.SeqStmt):
        return S.SeqStmt(tuple(_strip(c, producer, lifted) for c in s.stmts))
    return s  # a loop (T.Persistent's) or the producer itself: split_point placed the split above it


def _wrap(s: S.Stmt, allocations: list[S.Allocate]) -> S.Stmt:
    for alloc in reversed(allocations):
        s = dataclasses.replace(alloc, body=s)
    return s


def _after_the_pipeline(consume: S.Stmt, producer: ProducerLoop) -> tuple[S.Stmt, S.Stmt | None]:
    """The consumers' code up to the pipeline's last wgmma wait, and the rest (the epilogue; None: it
    allocates no shared tile, or the pipeline is not a statement of the consumers' top-level sequence). The stage tiles
    are dead in the rest: every tile the producer loaded has been consumed (its full barrier waited
    for), and every wgmma that read one has completed."""
    stmts = list(consume.stmts) if isinstance(consume, S.SeqStmt) else [consume]
    tiles = {id(load.dst) for n in walk(producer.body) if isinstance(n, TmaCopy) for load in n.loads}
    uses = [i for i, c in enumerate(stmts) if any(_uses(n, tiles) for n in walk(c))]
    if not uses:
        return consume, None
    end = uses[-1]
    while end + 1 < len(stmts) and isinstance(stmts[end + 1], WgmmaWait):
        end += 1
    rest = stmts[end + 1 :]
    if not any(isinstance(n, S.Allocate) and n.buffer.scope in SHARED for c in rest for n in walk(c)):
        return consume, None  # no tile of its own that could take the stage tiles' bytes: one branch
    return S.seq(*stmts[: end + 1]), S.seq(*rest)


def _split_scopes(branch: S.Stmt, tail: S.Stmt, lifted: list[S.Allocate], tx: E.Var, threads: int) -> S.Stmt:
    """The producer / consumer branch, then the consumers' epilogue in a branch of its own (the producer
    warpgroup has left: ProducerExit): the stage tiles' allocations enclose only the first, so the
    epilogue's tiles may take their bytes (a staging tile for TMA stores and 4 stages of 256x128x64 then
    fit). Allocations the epilogue uses enclose both."""
    nodes = list(walk(tail))
    both = [a for a in lifted if any(_uses(n, {id(a.buffer)}) for n in nodes)]
    first = [a for a in lifted if a not in both]
    epilogue = S.IfThenElse(E.compare(E.LT, tx, threads), tail)
    return _wrap(S.seq(_wrap(branch, first), epilogue), both)


@module_pass("warp-specialize")
def warp_specialize(mod: IRModule, ctx) -> IRModule:
    """A kernel with a producer loop runs it on an extra warpgroup; its other code runs on the consumers."""
    return map_launches(mod, _specialize)
