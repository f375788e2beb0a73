"""The general schedule's one wgmma left in flight: a warp-specialized loop with other code than TMA copies
and gemms (warp_specialize.py) completes each gemm in place and releases its tiles right after it. When
the loop has one gemm, a wgmma of shared operands, its stages are at least two and the statement after it
does not touch its accumulator on every path, the consumers instead leave its group in flight, as a
GEMM's loop does:

    wait for the tiles; gemm (wait_group 1: the previous iteration's group retires)
    k > 0: release the previous iteration's tiles of the gemm
    the other statements, each one that touches the accumulator preceded by wait_group 0
    after the loop: wait_group 0

A statement that touches the accumulator under a condition gets its wait inside the branch that does
(fp8 GEMM's "2xAcc": the accumulator is added into a second one every other iteration), so the
iterations that do not take the branch overlap their wgmmas with the next tile's wait. With one stage
the consumers would release tile k only after issuing the gemm of tile k+1, which the producer cannot
load before that release: such loops complete in place.
"""

from __future__ import annotations

import dataclasses

from tilecraft.cuda.ir import GemmCall, TmaCopy, WgmmaWait
from tilecraft.cuda.transform.overlap import Piece, accesses
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S

# Why a general-schedule loop completes its gemm in place (the transform's notes name it).
IN_PLACE = "T.Pipelined loop completes its gemm in place"


def in_flight_gemm(stmts: list[S.Stmt], stages: int) -> tuple[int | None, str]:
    """The position of the gemm the consumers may leave in flight, or why none may be."""
    gemms = [i for i, s in enumerate(stmts) if isinstance(s, GemmCall)]
    if len(gemms) != 1:
        return None, f"the loop has {len(gemms)} gemms (one is left in flight)"
    gemm = stmts[gemms[0]]
    if gemm.variant != "wgmma":
        return None, f"its gemm is {gemm.variant} (a wgmma of shared operands is left in flight)"
    if stages < 2:
        return None, "the loop has one stage (the release of a tile would wait for the next one)"
    if any(_writes_operands(s, gemm) for s in stmts if s is not gemm):
        return None, "other code writes the gemm's operand tiles"
    at = gemms[0]
    following = [s for s in stmts[at + 1 :] + stmts[:at] if not isinstance(s, TmaCopy)]
    if following and _waits_at_once(following[0], gemm):
        return None, "the statement after the gemm reads its accumulator (nothing would overlap the gemm)"
    return at, ""


def left_in_flight(
    pieces: list[Piece], at: int, position: E.Expr, counter: E.Expr, stages: int
) -> list[S.Stmt]:
    """One consumer iteration (the statements with their releases, in order) with the gemm at `at` left in
    flight; `position` is the iteration's place in the rings, `counter` the loop's count (> 0 past the
    first iteration)."""
    gemm = pieces[at][0]
    previous = E.floormod(E.add(position, stages - 1), stages)
    out: list[S.Stmt] = []
    for i, (stmt, after) in enumerate(pieces):
        if i != at:
            out += [completing(stmt, gemm), *after]
            continue
        # the previous iteration's group has retired once this one's returns with one group in flight
        deferred = [dataclasses.replace(r, stage=previous) for r in after]
        out.append(dataclasses.replace(gemm, wait=1))
        if deferred:
            out.append(S.IfThenElse(E.compare(E.GT, counter, 0), S.seq(*deferred)))
    return out


def completing(s: S.Stmt, gemm: GemmCall) -> S.Stmt:
    """`s` with `wait_group 0` before the first place that touches the in-flight gemm's accumulator:
    inside the branches of a condition that does not, else before `s`."""
    if not _touches(s, gemm):
        return s
    if isinstance(s, S.IfThenElse) and not _touches(S.Evaluate(s.condition), gemm):
        otherwise = None if s.else_case is None else completing(s.else_case, gemm)
        return dataclasses.replace(s, then_case=completing(s.then_case, gemm), else_case=otherwise)
    if isinstance(s, S.SeqStmt):
        first = next(i for i, x in enumerate(s.stmts) if _touches(x, gemm))
        return S.seq(*s.stmts[:first], completing(s.stmts[first], gemm), *s.stmts[first + 1 :])
    return S.seq(WgmmaWait(0, (gemm.c,)), s)


def _waits_at_once(s: S.Stmt, gemm: GemmCall) -> bool:
    """`completing(s, gemm)` starts with the wait: `s` touches the accumulator on every path."""
    waited = completing(s, gemm)
    first = waited.stmts[0] if isinstance(waited, S.SeqStmt) else waited
    return isinstance(first, WgmmaWait)


def _touches(s: S.Stmt, gemm: GemmCall) -> bool:
    reads, writes = accesses([s])
    return id(gemm.c) in reads | writes


def _writes_operands(s: S.Stmt, gemm: GemmCall) -> bool:
    return bool({id(gemm.a), id(gemm.b)} & accesses([s])[1])
