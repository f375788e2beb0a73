"""Barrier insertion: a `__syncthreads()` wherever shared memory written by some threads is read by
others, or read by some threads is overwritten by others, before a barrier separates them.

The analysis is conservative (any two accesses of one shared buffer across a write may involve
different threads), follows program order through straight-line code, uniform branches and loops
(`for` and `while`, including the hazard from the end of one iteration to the start of the next, and
a `while` condition's reads of what the previous iteration wrote), and never places a
barrier under a condition that depends on the thread. Buffers a software pipeline already guards
with its own wait and barrier are left to it. Shared buffers whose scopes do not overlap may share
bytes (storage planning reuses them), so a new scope is separated from the accesses of ended ones.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.backend.simt import SimtFacts, SimtTarget
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Node
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import children, free_vars, map_launches
from tilecraft.transform.thread_groups import ThreadGroup, as_group, block_group, branch_groups

SHARED = ("shared", "shared.dyn")
# A loop annotation listing shared buffers a software pipeline guards with its own waits and barriers.
PIPELINED_BUFFERS = "pipelined_buffers"


def sync() -> S.Stmt:
    return S.Evaluate(E.Call(dt.int32, "sync_threads", ()))


def is_sync(s: S.Stmt) -> bool:
    return isinstance(s, S.Evaluate) and isinstance(s.value, E.Call) and s.value.op == "sync_threads"


Accessed = dict[int, frozenset]  # shared buffer id -> the thread groups that accessed it


@dataclasses.dataclass
class State:
    """The shared accesses since the last barrier, each with the thread groups that made it: accesses by
    threads that do not overlap need no barrier between them (thread groups that hand data to each other
    order themselves, with mbarriers as TileLang's warp-specialized kernels do)."""

    reads: Accessed = dataclasses.field(default_factory=dict)
    writes: Accessed = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, reads: set[int], writes: set[int], group: ThreadGroup) -> State:
        return cls().add(reads, writes, group)

    def copy(self) -> State:
        return State(dict(self.reads), dict(self.writes))

    def merge(self, other: State) -> State:
        return State(_union(self.reads, other.reads), _union(self.writes, other.writes))

    def add(self, reads: set[int], writes: set[int], group: ThreadGroup) -> State:
        return self.merge(
            State({b: frozenset({group}) for b in reads}, {b: frozenset({group}) for b in writes})
        )

    def conflicts(self, reads: set[int], writes: set[int], group: ThreadGroup) -> bool:
        """Read-after-write or write-after-read by threads that overlap; tile programs do not write one
        element from two threads."""
        return _overlapping(reads, self.writes, group) or _overlapping(writes, self.reads, group)

    def buffers(self) -> set[int]:
        return set(self.reads) | set(self.writes)


def _union(a: Accessed, b: Accessed) -> Accessed:
    out = dict(a)
    for key, groups in b.items():
        out[key] = out.get(key, frozenset()) | groups
    return out


def _overlapping(buffers: set[int], pending: Accessed, group: ThreadGroup) -> bool:
    return any(g.lo < group.hi and group.lo < g.hi for b in buffers & pending.keys() for g in pending[b])


class Accesses:
    """Shared buffers a statement reads and writes; `extra(node)` gives (read buffers, written buffers)
    for the backend's own statements (copies, gemm calls), or None for nodes it does not know.

    The analysis asks about a loop before its body and about each body twice (the loop-carried
    hazard), so every nested statement is asked about many times: each statement's answer is kept
    (with the statement, so that its id is not reused) and a statement's answer is its own nodes' and
    its sub-statements' answers, which makes a kernel linear in its size rather than in size x depth.
    """

    def __init__(self, skip: set[int], extra=None) -> None:
        self.skip = skip
        self.extra = extra
        self._known: dict[int, tuple[S.Stmt, frozenset[int], frozenset[int]]] = {}

    def __call__(self, s: S.Stmt) -> tuple[set[int], set[int]]:
        reads, writes = self._all(s)
        return set(reads - self.skip), set(writes - self.skip)

    def _all(self, s: S.Stmt) -> tuple[frozenset[int], frozenset[int]]:
        known = self._known.get(id(s))
        if known is not None and known[0] is s:
            return known[1], known[2]
        reads, writes = set(), set()

        def note(buf, into):
            if buf.scope in SHARED:
                into.add(id(buf))

        stack = [s]
        while stack:
            n = stack.pop()
            if isinstance(n, tuple):
                stack.extend(n)
                continue
            if not isinstance(n, Node):
                continue
            if n is not s and isinstance(n, S.Stmt):
                inner_reads, inner_writes = self._all(n)
                reads |= inner_reads
                writes |= inner_writes
                continue
            if isinstance(n, E.BufferLoad):
                note(n.buffer, reads)
            elif isinstance(n, S.BufferStore):
                note(n.buffer, writes)
            elif isinstance(n, AtomicUpdate):  # a read-modify-write: ordered after earlier stores too
                note(n.buffer, reads)
                note(n.buffer, writes)
            elif self.extra is not None and (found := self.extra(n)) is not None:
                for buf in found[0]:
                    note(buf, reads)
                for buf in found[1]:
                    note(buf, writes)
            if not isinstance(n, Buffer):
                stack.extend(c for c in children(n) if isinstance(c, (Node, tuple)))
        self._known[id(s)] = (s, frozenset(reads), frozenset(writes))
        return self._known[id(s)][1], self._known[id(s)][2]


class Barriers:
    def __init__(self, launch: S.KernelLaunch, extra=None, simt: SimtTarget | None = None,
                 target=None) -> None:  # fmt: skip
        self.thread_ids = {id(v) for v in launch.thread_vars}
        self.tid = launch.thread_vars[0] if len(launch.thread_vars) == 1 else None
        self.skip: set[int] = set()  # updated in place: self.accesses reads it
        self.live: set[int] = set()
        self.accesses = Accesses(self.skip, extra)
        self.block = block_group(launch)
        self.group = self.block  # the thread group whose code is being analysed
        self.simt = simt  # None: branches on the thread index are not analysed inside (no thread groups)
        self.group_index: dict[ThreadGroup, int] = {}
        self.target = target
        self.span = launch.span

    def uniform(self, cond: E.Expr) -> bool:
        return not any(id(v) in self.thread_ids for v in free_vars(cond))

    def _whole_block(self) -> bool:
        return self.group.lo == 0 and self.group.count >= self.block.count

    def sync(self) -> S.Stmt:
        """A barrier among the threads of the current group (the block's `__syncthreads` for the block)."""
        if self._whole_block():
            return sync()
        if self.simt is None or self.simt.partial_barrier is None:
            raise LoweringError(
                f"shared memory written and read inside a branch on the thread index ({self.group}) needs a "
                "barrier among that group's threads, which this target does not have",
                self.span,
                "move the shared-memory traffic out of the branch, or write it for the whole block",
                target=self.target,
            )
        index = self.group_index.setdefault(self.group, len(self.group_index))
        return self.simt.partial_barrier(self.group, index)

    def _group_sides(self, s: S.IfThenElse) -> tuple[ThreadGroup | None, ThreadGroup | None] | None:
        """For a branch on the thread index whose every side that some thread takes is a contiguous range
        of whole warps (a thread group after lower-to-threads), the group of each side."""
        if self.tid is None or self.simt is None:
            return None
        sides = branch_groups(s, self.tid, self.group)
        if sides is None:
            return None
        groups = []
        for body, threads in ((s.then_case, sides[0]), (s.else_case, sides[1])):
            group = as_group(threads)
            width = self.simt.width
            if body is not None and threads and (group is None or group.lo % width or group.count % width):
                return None
            groups.append(group if body is not None else None)
        return groups[0], groups[1]

    def run(self, s: S.Stmt, state: State) -> tuple[S.Stmt, State]:
        if isinstance(s, S.SeqStmt):
            out = []
            for child in s.stmts:
                child, state = self.run(child, state)
                out.append(child)
            return S.seq(*out), state
        if is_sync(s):
            # a block barrier placed earlier (a software pipeline's) inside a thread group's code meets only
            # that group's threads
            return (s if self._whole_block() else self.sync()), State()
        if isinstance(s, S.Allocate) and s.buffer.scope in SHARED:
            return self._shared_scope(s, state)
        if isinstance(s, S.LetStmt):
            return self._let(s, state)
        if isinstance(s, S.Allocate):
            body, state = self.run(s.body, state)
            return dataclasses.replace(s, body=body), state
        if isinstance(s, S.For) and self.uniform(E.add(s.min, s.extent)):
            return self._loop(s, state)
        if isinstance(s, S.While) and self.uniform(s.condition):
            return self._while(s, state)
        if isinstance(s, S.IfThenElse) and self.uniform(s.condition):
            return self._branch(s, state)
        if isinstance(s, S.IfThenElse) and (sides := self._group_sides(s)) is not None:
            return self._group_branch(s, state, sides)
        return self._leaf(s, state)

    def _group_branch(self, s: S.IfThenElse, state: State, sides) -> tuple[S.Stmt, State]:
        """A branch whose sides are thread groups: each side is analysed as the code of its group, with
        barriers among its threads. What the branch accesses that earlier code of other threads wrote (or
        read) is separated by a barrier of the enclosing group before the branch; afterwards, either
        side's accesses may be pending."""
        sides_accesses = [(self.accesses(b), g) for b, g in ((s.then_case, sides[0]), (s.else_case, sides[1]))
                          if b is not None and g is not None]  # fmt: skip
        before = any(state.conflicts(r, w, g) for (r, w), g in sides_accesses)
        barrier = self.sync() if before else None
        if before:
            state = State()
        cases, end = [], state
        for body, group in ((s.then_case, sides[0]), (s.else_case, sides[1])):
            if body is None or group is None:
                cases.append(body)
                if body is not None:  # a side of scalar code, run by its threads of the current group
                    r, w = self.accesses(body)
                    end = end.add(r, w, self.group)
                continue
            saved, self.group = self.group, group
            try:
                body, inner = self.run(body, State())
            finally:
                self.group = saved
            cases.append(body)
            end = end.merge(inner)
        branch = dataclasses.replace(s, then_case=cases[0], else_case=cases[1])
        return (branch if barrier is None else S.seq(barrier, branch)), end

    def _branch(self, s: S.IfThenElse, state: State) -> tuple[S.Stmt, State]:
        """The condition is read first (a barrier before the `if` when it reads what others wrote)."""
        test = S.Evaluate(s.condition)
        checked, state = self._leaf(test, state)
        then_case, a = self.run(s.then_case, state.copy())
        else_case, b = (None, state) if s.else_case is None else self.run(s.else_case, state.copy())
        branch = dataclasses.replace(s, then_case=then_case, else_case=else_case)
        return (branch if checked is test else S.seq(self.sync(), branch)), a.merge(b)

    def _let(self, s: S.LetStmt, state: State) -> tuple[S.Stmt, State]:
        """The bound value is read first (a barrier before the binding when it reads what others wrote),
        and its reads stay pending for what follows."""
        value = S.Evaluate(s.value)
        checked, state = self._leaf(value, state)
        body, state = self.run(s.body, state)
        let = dataclasses.replace(s, body=body)
        return (let if checked is value else S.seq(self.sync(), let)), state

    def _shared_scope(self, s: S.Allocate, state: State) -> tuple[S.Stmt, State]:
        """Storage planning gives a new shared buffer the bytes of buffers whose scope has ended, so
        their pending accesses conflict with it: one barrier before the scope separates them."""
        dead = state.buffers() - self.live
        if dead:
            state = State()
        self.live.add(id(s.buffer))
        try:
            body, state = self.run(s.body, state)
        finally:
            self.live.discard(id(s.buffer))
        scope = dataclasses.replace(s, body=body)
        return (S.seq(self.sync(), scope) if dead else scope), state

    def _leaf(self, s: S.Stmt, state: State) -> tuple[S.Stmt, State]:
        reads, writes = self.accesses(s)
        if state.conflicts(reads, writes, self.group):
            return S.seq(self.sync(), s), State.of(reads, writes, self.group)
        return s, state.add(reads, writes, self.group)

    def _loop(self, s: S.For, state: State) -> tuple[S.Stmt, State]:
        staged = S.annotation(s.annotations, PIPELINED_BUFFERS) or ()
        added = {id(b) for b in staged} - self.skip
        self.skip |= added
        try:
            # A hazard with what came before the loop is resolved once, before it, rather than by a
            # barrier inside the body that every iteration would pay for.
            reads, writes = self.accesses(s)
            before = state.conflicts(reads, writes, self.group)
            if before:
                state = State()
            _, end = self.run(s.body, state.copy())
            body, end = self.run(s.body, state.merge(end))
        finally:
            self.skip -= added
        loop = dataclasses.replace(s, body=body)
        return (S.seq(self.sync(), loop) if before else loop), state.merge(end)

    def _while(self, s: S.While, state: State) -> tuple[S.Stmt, State]:
        """A while loop is analysed as a loop whose body starts by reading its condition; a barrier the
        condition needs after the previous iteration's writes goes at the end of the body (and, for the
        first iteration, before the loop)."""
        reads, writes = self.accesses(s)
        before = state.conflicts(reads, writes, self.group)
        if before:
            state = State()
        iteration = S.seq(S.Evaluate(s.condition), s.body)
        _, end = self.run(iteration, state.copy())
        iteration, end = self.run(iteration, state.merge(end))
        stmts = list(iteration.stmts) if isinstance(iteration, S.SeqStmt) else [iteration]
        synced = is_sync(stmts[0])
        body = S.seq(*stmts[2 if synced else 1 :], self.sync() if synced else None)
        loop = dataclasses.replace(s, body=body)
        return (S.seq(self.sync(), loop) if before else loop), state.merge(end)


def _insert(launch: S.KernelLaunch, extra, simt: SimtTarget | None, target) -> S.Stmt:
    body, _ = Barriers(launch, extra, simt, target).run(launch.body, State())
    return dataclasses.replace(launch, body=body)


def insert_barriers(extra=None, simt: SimtFacts | None = None):
    """The `insert-barriers` pass; `extra` describes the shared accesses of the backend's statements. With
    the target's SIMT facts (`simt`), the sides of a branch on the thread index that are thread groups
    (whole groups of `width` threads) are analysed as their group's code, with the target's partial
    barriers; without, such a branch is one statement, as any branch on the thread index."""

    @module_pass("insert-barriers")
    def run(mod: IRModule, ctx) -> IRModule:
        """A barrier separates shared-memory writes from other threads' later reads (and reads from writes)."""
        facts = simt(ctx.target) if simt is not None else None
        return map_launches(mod, lambda launch: _insert(launch, extra, facts, ctx.target))

    return run
