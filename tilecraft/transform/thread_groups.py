"""Thread groups: branches on the thread index that split a block into groups running tile-level code.

`if T.get_thread_binding() < 32: A else: B` (TileLang's deepseek mHC kernel; `T.ws(k)` is the same with
`128 * k <= tid < 128 * (k + 1)`) runs A as tile-level code on threads [0, 32) and B on the others:
A's `T.Parallel` loops and tile operations are spread over A's threads only. A condition is a thread
condition when the thread index is its only variable; the threads that take each side are found by
evaluating it for every thread of the enclosing group (a block has at most a few thousand), so any
form of it works: `tid < c`, `c <= tid`, `tid // 128 == k`, conjunctions.

A `ThreadGroup` is a contiguous range of threads `[lo, lo + count)`. SIMT layouts spread a tile over a
power of two of threads, so a group of `count` threads uses the largest power of two `span <= count`;
thread `lo + t` acts as thread `t % span` of the layouts, and the threads past `span` (the *twins*,
with `count < 2 * span` each twin mirrors exactly one thread) compute the same values as the thread they
mirror but write no memory. A block of 96 threads is such a group: 64 threads partition its tiles, and
warp 2 mirrors warp 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.visitor import free_vars, sub_statements, walk


@dataclass(frozen=True)
class ThreadGroup:
    """Threads `[lo, lo + count)` of a block, running tile-level code together."""

    lo: int
    count: int

    @property
    def hi(self) -> int:
        return self.lo + self.count

    @property
    def span(self) -> int:
        """The threads tile layouts spread over: the largest power of two that is at most `count`."""
        return 1 << (self.count.bit_length() - 1)

    @property
    def whole(self) -> bool:
        """Every thread of the group is a thread of the layouts (no twins, no offset)."""
        return self.lo == 0 and self.count == self.span

    def local_thread(self, tid: E.Expr) -> E.Expr:
        """The thread the layouts see: `(tid - lo) % span`."""
        local = tid if self.lo == 0 else E.sub(tid, self.lo)
        return local if self.count == self.span else E.floormod(local, self.span)

    def primary(self, tid: E.Expr) -> E.Expr | None:
        """The condition that `tid` is no twin (None: the group has none): the thread that writes memory."""
        if self.count == self.span:
            return None
        local = tid if self.lo == 0 else E.sub(tid, self.lo)
        return E.compare(E.LT, local, self.span)

    def __str__(self) -> str:
        return f"threads [{self.lo}, {self.hi})"


def block_group(launch: S.KernelLaunch) -> ThreadGroup:
    count = 1
    for t in launch.threads:
        count *= t
    return ThreadGroup(0, count)


def is_thread_condition(cond: E.Expr, tid: E.Var) -> bool:
    """Whether `cond` depends on the thread index alone (and constants)."""
    variables = free_vars(cond)
    return bool(variables) and all(v is tid for v in variables) and not _loads(cond)


def _loads(cond: E.Expr) -> bool:
    return any(isinstance(n, E.BufferLoad) for n in walk(cond))


def taking_threads(cond: E.Expr, tid: E.Var, group: ThreadGroup) -> tuple[list[int], list[int]]:
    """The threads of `group` for which a thread condition holds, and those for which it does not."""
    taken, others = [], []
    for t in range(group.lo, group.hi):
        (taken if evaluate(cond, {tid: t}) else others).append(t)
    return taken, others


def as_group(threads: list[int]) -> ThreadGroup | None:
    """The group of a sorted list of threads when it is a non-empty contiguous range, else None."""
    if not threads or threads[-1] - threads[0] + 1 != len(threads):
        return None
    return ThreadGroup(threads[0], len(threads))


def branch_groups(s: S.IfThenElse, tid: E.Var, group: ThreadGroup) -> tuple[list[int], list[int]] | None:
    """For a branch on a thread condition, the threads of `group` that take the then and the else side
    (sorted); None for any other branch."""
    if not is_thread_condition(s.condition, tid):
        return None
    return taking_threads(s.condition, tid, group)


def check_group(threads: list[int], width: int, span, target) -> ThreadGroup:
    """The group running a branch's tile-level code: contiguous whole thread groups of `width` threads
    (whose lane exchanges need every lane), else a LoweringError at `span`."""
    group = as_group(threads)
    if group is None or group.lo % width or group.count % width:
        where = f"threads {threads[0]}..{threads[-1]}" if threads else "no thread"
        raise LoweringError(
            f"tile-level code under a branch on the thread index runs on {where}"
            + ("" if group is not None else " (not one contiguous range)")
            + f"; a thread group that runs tile operations must be a contiguous range of whole groups of "
            f"{width} threads",
            span,
            f"branch on a multiple of {width} (`if T.get_thread_binding() < {width}:`), or write the "
            "per-thread code with scalar statements",
            target=target,
        )
    return group


def tile_level(node: S.Stmt) -> bool:
    """Whether `node` holds tile-level code: T.Parallel loops or tile operations. (Scalar statements that
    read or write a fragment element, `if tx == 0: out[0] = m[0]`, are per-thread code of the enclosing
    group: the thread reads its own registers.)"""
    for n in walk(node):
        if isinstance(n, S.TileOp):
            return True
        if isinstance(n, S.For) and n.kind is S.ForKind.PARALLEL:
            return True
    return False


def groups_of(launch: S.KernelLaunch, width: int, target) -> Iterator[tuple[S.Stmt, ThreadGroup]]:
    """Every statement of the launch (pre-order) with the thread group running it; a branch on a thread
    condition whose sides hold tile-level code must split the group into checked groups (a side that only
    runs scalar code keeps the enclosing group: its statements are per-thread code)."""
    tid = launch.thread_vars[0] if launch.thread_vars else None
    yield from _walk(launch.body, block_group(launch), tid, width, target)


def _walk(s: S.Stmt, group: ThreadGroup, tid, width: int, target) -> Iterator[tuple[S.Stmt, ThreadGroup]]:
    yield s, group
    if isinstance(s, S.IfThenElse) and tid is not None:
        sides = branch_groups(s, tid, group)
        if sides is not None:
            for body, threads in ((s.then_case, sides[0]), (s.else_case, sides[1])):
                if body is not None:
                    # a side no thread takes never runs: its code keeps the enclosing group
                    runs_tiles = threads and tile_level(body)
                    inner = check_group(threads, width, s.span, target) if runs_tiles else group
                    yield from _walk(body, inner, tid, width, target)
            return
    for child in sub_statements(s):
        yield from _walk(child, group, tid, width, target)


__all__ = [
    "ThreadGroup",
    "as_group",
    "block_group",
    "branch_groups",
    "check_group",
    "groups_of",
    "is_thread_condition",
    "taking_threads",
    "tile_level",
]
