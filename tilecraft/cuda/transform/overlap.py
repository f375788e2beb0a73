"""FA3's intra-warpgroup overlap for a warp-specialized loop of two wgmma gemms (flash attention's
Q @ K^T and P @ V), on by default (the pass config `tilecraft.cuda.gemm_softmax_overlap` False switches it
off): the consumers
issue iteration k's first gemm, then iteration k-1's last one, and run iteration k's softmax while the
last one is still on the tensor cores (FlashAttention-3, "intra-warpgroup overlapping GEMMs and
softmax").

The loop body must read `pre, mid, tail`: `pre` ends with a wgmma of shared operands G1 (Q @ K^T),
`tail` is the last TMA copy and the wgmma G2 that reads its tile (V, P @ V), and there is no other
gemm. The rotation runs pre(k) before tail(k-1), so the two must commute (no buffer, register or
shared, that one writes and the other touches). The consumer's statements become

    prologue (n > 0): pre(0) mid(0)          the general schedule: gemms complete in place
    for k in 1 .. n-1 (the loop runs k - 1 from 0):
        pre(k)                               G1 issued with its group left in flight
        tail(k-1)                            G2 issued; wait_group 1 retires G1 (groups complete in order)
        wait_group 1, G1's accumulator pinned; release what G1 read last (K)
        mid(k) up to the first statement that touches G2's accumulator or writes its operands
        wait_group 0, G2's accumulator pinned and its register A kept to here; release tail's tiles
        the rest of mid(k)
    epilogue (n > 0): tail(n-1)              completes in place

so the softmax of tile k (mid) overlaps P @ V of tile k-1. Registers: the same buffers are live as
without the overlap (S and P are different fragments). The producer is unchanged: it still issues K(k)
before V(k), and the consumers, which now wait for K(k) before V(k-1), never wait for a tile whose
issue needs a release they have not made.
"""

from __future__ import annotations

import dataclasses

from tilecraft.cuda.ir import (
    AsyncCopy,
    GemmCall,
    TmaCopy,
    VectorCopy,
    VectorLoad,
    VectorStore,
    VectorZero,
    WgmmaWait,
)
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import walk

OVERLAP = "tilecraft.cuda.gemm_softmax_overlap"

# A consumer statement and the releases that follow it, as the general schedule orders them.
Piece = tuple[S.Stmt, list[S.Stmt]]


@dataclasses.dataclass(frozen=True)
class Overlap:
    first: int  # position of G1 in the loop body
    tail: int  # position of the last copy; G2 follows it and ends the body


def overlap_plan(stmts: list[S.Stmt]) -> tuple[Overlap | None, str]:
    """Where the body splits into pre, mid and tail, or why it cannot."""
    gemms = [i for i, s in enumerate(stmts) if isinstance(s, GemmCall)]
    if len(gemms) != 2:
        return None, f"the loop has {len(gemms)} gemms (the overlap pairs two)"
    first, last = gemms
    g1, g2 = stmts[first], stmts[last]
    if g1.variant != "wgmma" or not g2.variant.startswith("wgmma"):
        return (
            None,
            f"the gemms are {g1.variant} and {g2.variant} (the first must be a wgmma of shared operands)",
        )
    copy = stmts[last - 1]
    if last != len(stmts) - 1 or not isinstance(copy, TmaCopy) or last - 1 <= first:
        return None, "the loop does not end with a TMA copy and the gemm that reads it"
    if id(g2.b) not in {id(load.dst) for load in copy.loads}:
        return None, "the last gemm does not read the last copy's tile"
    if _conflict(stmts[: first + 1], stmts[last - 1 :]):
        return None, "the code up to the first gemm touches what the last gemm reads or writes"
    if any(isinstance(n, S.Allocate) and n.buffer.scope.startswith("shared") for s in stmts for n in walk(s)):
        return None, "the loop body allocates shared memory (the prologue would repeat the allocation)"
    return Overlap(first, last - 1), ""


def accesses(stmts: list[S.Stmt]) -> tuple[set[int], set[int]]:
    """The buffers of every scope (registers too) that `stmts` read and write, by id. A TMA copy is the
    consumer's wait for its tile, which the mbarriers order, so it accesses nothing here."""
    reads: set[int] = set()
    writes: set[int] = set()
    for n in (n for s in stmts if not isinstance(s, TmaCopy) for n in walk(s)):
        if isinstance(n, E.BufferLoad):
            reads.add(id(n.buffer))
        elif isinstance(n, (S.BufferStore, AtomicUpdate)):
            writes.add(id(n.buffer))
            if isinstance(n, AtomicUpdate):
                reads.add(id(n.buffer))
        elif isinstance(n, GemmCall):
            reads.update((id(n.a), id(n.b), id(n.c)))
            writes.add(id(n.c))
        elif isinstance(n, (AsyncCopy, VectorCopy, VectorLoad)):
            reads.add(id(n.src))
            writes.add(id(n.dst))
        elif isinstance(n, (VectorZero, VectorStore)):
            writes.add(id(n.dst))
    return reads, writes


def _conflict(one: list[S.Stmt], other: list[S.Stmt]) -> bool:
    reads, writes = accesses(one)
    other_reads, other_writes = accesses(other)
    return bool(writes & (other_reads | other_writes) or other_writes & reads)


def _touches_in_flight(s: S.Stmt, g2: GemmCall) -> bool:
    """`s` may not run while G2's wgmmas read their operands and write the accumulator."""
    reads, writes = accesses([s])
    return id(g2.c) in reads | writes or bool({id(g2.a), id(g2.b)} & writes)


def overlapped(plan: Overlap, stmts: list[S.Stmt], pieces_at, k: E.Var, n: E.Expr, annotations,
               span) -> list[S.Stmt]:  # fmt: skip
    """The consumer's prologue, loop and epilogue (module docstring). `pieces_at(it)` gives the consumer
    form of each statement of iteration `it` (a copy's wait, or the staged statement) with the releases
    after it. The loop runs k over 0 .. n-2: pre and mid of tile k+1, tail of tile k."""

    def flat(pieces: list[Piece], positions) -> list[S.Stmt]:
        return [x for i in positions for x in (pieces[i][0], *pieces[i][1])]

    last = len(stmts) - 1
    ahead, behind = pieces_at(E.add(k, 1)), pieces_at(k)
    g1, g2 = ahead[plan.first][0], behind[last][0]
    steady = [*flat(ahead, range(plan.first)), dataclasses.replace(g1, wait=1), *flat(behind, [plan.tail]),
              dataclasses.replace(g2, wait=1), WgmmaWait(1, (g1.c,)), *ahead[plan.first][1]]  # fmt: skip
    keep = (g2.a,) if g2.variant == "wgmma_rs" else ()
    completed = [WgmmaWait(0, (g2.c,), keep), *behind[last][1]]
    for i in range(plan.first + 1, plan.tail):
        if completed and _touches_in_flight(stmts[i], stmts[last]):
            steady, completed = [*steady, *completed], []
        steady += flat(ahead, [i])
    steady += completed
    has_tiles = E.compare(E.GT, n, 0)
    prologue = S.seq(*flat(pieces_at(E.const(0)), range(plan.tail)))
    epilogue = S.seq(*flat(pieces_at(E.sub(n, 1)), range(plan.tail, last + 1)))
    loop = S.For(k, E.const(0), E.sub(n, 1), S.ForKind.SERIAL, S.seq(*steady), annotations, span=span)
    return [S.IfThenElse(has_tiles, prologue), loop, S.IfThenElse(has_tiles, epilogue)]
