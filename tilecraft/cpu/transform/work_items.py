"""Per-thread code on the CPU: a block's threads emulated by loops over the thread index (POCL's
"work-item loops").

A CPU block runs as one thread, which is enough for tile-level code: a tile op or a `T.Parallel` nest is
the whole block's work, done once. Per-thread code (SIMT code that reads `T.get_thread_binding()`, or
per-thread storage: `T.alloc_local`, `T.alloc_var`) is run by every thread of the block, and threads meet
at barriers. This pass runs such a kernel's code as regions between *split points*: a barrier (written
with `T.sync_threads()`, or inserted where per-thread accesses of shared memory would race: the shared
`insert-barriers` analysis) or a statement the block runs once (tile-level code, a uniform scalar atomic,
an mbarrier operation). Each maximal run of per-thread statements between split points becomes
`for t in range(threads): <run, with t for the thread index>`; statements that contain split points keep
their structure (a loop, or a branch, whose condition is the same in every thread) and are split inside.

What lives across a split point must be per thread: a `T.alloc_local` / `T.alloc_var` buffer whose scope
contains one gets a leading dim of `threads` (indexed by the thread), a `LetStmt` whose value differs
between threads becomes such an array, filled in a loop of its own. A branch on the thread index whose
sides run tile-level code is a thread group (run-thread-groups runs those sides later); per-thread code
inside a side runs in the loops for the threads that take the side. A split point inside control that
differs between threads (a barrier some threads skip) is a located error: no order of the threads' runs
could honour it.
"""

from __future__ import annotations

import dataclasses
import math

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import BufferKeepingMutator, children, map_launches, substitute, walk
from tilecraft.transform.simt.barriers import Barriers, State, is_sync
from tilecraft.transform.thread_groups import is_thread_condition, tile_level
from tilecraft.transform.uniformity import PER_THREAD_SCOPES, ThreadVarying

STRUCTURE = (S.SeqStmt, S.For, S.While, S.IfThenElse, S.LetStmt, S.Allocate)
# Statements a block (or a thread group) runs once whatever its threads: mbarrier operations count the
# group's threads themselves (emulate-mbarriers).
ONCE = (S.Mbarrier, S.BarrierInit)
# The limit the work-item loops report (declared in the manifest): a barrier some threads skip.
DIVERGENT_BARRIER = "feature:divergent-barrier"


def _structure(s: S.Stmt) -> bool:
    """A statement split points may be inside of (a T.Parallel nest is tile-level code, a leaf)."""
    return isinstance(s, STRUCTURE) and not (isinstance(s, S.For) and s.kind is S.ForKind.PARALLEL)


def tile_op_accesses(node) -> tuple[tuple[Buffer, ...], tuple[Buffer, ...]] | None:
    """The buffers a tile op reads and writes, for the barrier analysis (None: not a tile op)."""
    if not isinstance(node, S.TileOp):
        return None
    regions = [c for c in children(node) if isinstance(c, BufferRegion)]
    if isinstance(node, S.Gemm):
        return (node.a.buffer, node.b.buffer, node.c.buffer), (node.c.buffer,)
    dst = getattr(node, "dst", None)
    if isinstance(dst, BufferRegion):
        reads = tuple(r.buffer for r in regions if r is not dst)
        if isinstance(node, S.AtomicOp):
            reads += (dst.buffer,)
        return reads, (dst.buffer,)
    return tuple(r.buffer for r in regions), ()


class _Rewrite(BufferKeepingMutator):
    """Per-thread arrays for the buffers and let-bound values that live across split points."""

    def __init__(self, tid: E.Var, buffers: dict[int, Buffer], values: dict[E.Var, E.Expr]) -> None:
        super().__init__()
        self.tid = tid
        self.buffers = buffers
        self.values = values

    def mutate_Var(self, v: E.Var) -> E.Expr:
        return self.values.get(v, v)

    def _indices(self, buf: Buffer, indices) -> tuple:
        indices = tuple(self.mutate(i) for i in indices)
        return (self.tid, *indices) if id(buf) in self.buffers else indices

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        return E.BufferLoad(e.dtype, self.buffers.get(id(e.buffer), e.buffer), self._indices(e.buffer, e.indices))

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        return S.BufferStore(self.buffers.get(id(s.buffer), s.buffer), self.mutate(s.value),
                             self._indices(s.buffer, s.indices), span=s.span)  # fmt: skip

    def mutate_AtomicUpdate(self, s: AtomicUpdate) -> S.Stmt:
        return dataclasses.replace(s, buffer=self.buffers.get(id(s.buffer), s.buffer), value=self.mutate(s.value),
                                   indices=self._indices(s.buffer, s.indices))  # fmt: skip

    def mutate_ThreadAllReduce(self, s: S.ThreadAllReduce) -> S.Stmt:
        return dataclasses.replace(s, buffer=self.buffers.get(id(s.buffer), s.buffer), value=self.mutate(s.value),
                                   indices=self._indices(s.buffer, s.indices))  # fmt: skip

    def mutate_BufferRegion(self, r: BufferRegion) -> BufferRegion:
        ranges = tuple(Range(self.mutate(x.min), self.mutate(x.extent)) for x in r.ranges)
        if id(r.buffer) not in self.buffers:
            return BufferRegion(r.buffer, ranges)
        return BufferRegion(self.buffers[id(r.buffer)], (Range(self.tid, E.const(1)), *ranges))


class WorkItems:
    """The work-item loops of one launch (after the barriers its per-thread code needs are in place)."""

    def __init__(self, launch: S.KernelLaunch, target) -> None:
        self.launch = launch
        self.target = target
        self.tid = launch.thread_vars[0]
        self.threads = math.prod(launch.threads)
        self.varying = ThreadVarying(launch)
        self.user_locals = {id(s.buffer) for s in walk(launch.body)
                            if isinstance(s, S.Allocate) and s.buffer.scope in PER_THREAD_SCOPES}  # fmt: skip
        self.rewrite = _Rewrite(self.tid, {}, {})
        self.fresh = 0
        self._splits: dict[int, bool] = {}
        self._per_thread: dict[int, bool] = {}

    # ------------------------------------------------------------------ classification

    def per_thread_leaf(self, s: S.Stmt) -> bool:
        """A leaf every thread runs for itself: it differs between threads, or touches per-thread storage."""
        if isinstance(s, ONCE):
            return False
        if isinstance(s, S.TileOp):
            return self.varying.per_thread_tile_op(s)
        if tile_level(s):  # a T.Parallel nest: the block's unless it reads per-thread values
            return self.varying.operands(s) or self._touches_locals(s)
        if isinstance(s, S.BufferStore) and s.buffer.scope not in PER_THREAD_SCOPES:
            # Every thread storing the same value into its copy of a replicated fragment (or into a shared
            # tile) is one store of the block here, where the block holds one copy: run per thread, a
            # read-modify-write (`running_sum[0] = running_sum[0] * scale + s`) would repeat per thread.
            return self.varying.stmt(s) or self._touches_locals(s)
        return True

    def _touches_locals(self, s: S.Stmt) -> bool:
        return any(isinstance(n, (E.BufferLoad, S.BufferStore, AtomicUpdate, BufferRegion, S.ThreadAllReduce))
                   and id(n.buffer) in self.user_locals for n in walk(s))  # fmt: skip

    def has_per_thread(self, s: S.Stmt) -> bool:
        known = self._per_thread.get(id(s))
        if known is None:
            if _structure(s):
                known = any(self.has_per_thread(c) for c in _sub_statements(s))
            else:
                known = self.per_thread_leaf(s)
            self._per_thread[id(s)] = known
        return known

    def splits(self, s: S.Stmt) -> bool:
        """Whether `s` holds a split point: a barrier, or a leaf the block runs once."""
        known = self._splits.get(id(s))
        if known is None:
            if is_sync(s):
                known = True
            elif _structure(s):
                known = any(self.splits(c) for c in _sub_statements(s))
            else:
                known = not self.per_thread_leaf(s)
            self._splits[id(s)] = known
        return known

    def needed(self) -> bool:
        """Whether the launch has per-thread code that reads the thread index (else it runs as before)."""
        return any(self.varying.stmt(n) for n in walk(self.launch.body)
                   if isinstance(n, S.Stmt) and not _structure(n))  # fmt: skip

    # ------------------------------------------------------------------ emission

    def run(self) -> S.KernelLaunch:
        body = self.emit(self.launch.body, None)
        return dataclasses.replace(self.launch, body=body)

    def emit(self, s: S.Stmt, group: E.Expr | None) -> S.Stmt:
        """`s` with its per-thread runs in work-item loops; `group`: the thread condition of the thread
        group whose code `s` is (None: the whole block)."""
        if not self.splits(s):
            return self.loop([s], group)
        if not self.has_per_thread(s):
            return self.rewrite.mutate(s)  # the block runs it once (its sync_threads are no-ops here)
        if isinstance(s, S.SeqStmt):
            out, run = [], []
            for child in s.stmts:
                if self.splits(child):
                    out += [self.loop(run, group), self.emit(child, group)]
                    run = []
                else:
                    run.append(child)
            return S.seq(*out, self.loop(run, group))
        if isinstance(s, S.For):
            self.uniform(s, (s.min, s.extent), "a loop whose trip count")
            body = self.emit(s.body, group)
            return dataclasses.replace(s, min=self.rewrite.mutate(s.min), extent=self.rewrite.mutate(s.extent),
                                       body=body)  # fmt: skip
        if isinstance(s, S.While):
            self.uniform(s, s.condition, "a while loop whose condition")
            return dataclasses.replace(s, condition=self.rewrite.mutate(s.condition), body=self.emit(s.body, group))
        if isinstance(s, S.IfThenElse):
            return self._branch(s, group)
        if isinstance(s, S.LetStmt):
            return self._let(s, group)
        if isinstance(s, S.Allocate):
            return self._allocate(s, group)
        return self.rewrite.mutate(s)

    def loop(self, run: list[S.Stmt], group: E.Expr | None) -> S.Stmt | None:
        """`for t in range(threads): run` with `t` for the thread index (only the group's threads)."""
        if not run:
            return None
        body = self.rewrite.mutate(S.seq(*run))
        if group is not None:
            body = S.IfThenElse(group, body, span=run[0].span)
        self.fresh += 1
        t = E.Var(dt.int32, f"{self.tid.name}_{self.fresh}")
        return S.For(t, E.const(0), E.const(self.threads), S.ForKind.SERIAL, substitute(body, {self.tid: t}),
                     span=run[0].span)  # fmt: skip

    def uniform(self, s: S.Stmt, header, what: str) -> None:
        if self.varying.expr(header) or id(s) in self.varying.controlled:
            raise LoweringError(
                f"{what} differs between threads holds a barrier (or code the block runs once), which some "
                "threads would skip; the CPU target runs a block's threads one after the other between "
                "barriers and cannot order them",
                s.span,
                "keep barriers, tile operations and T.tvm_thread_allreduce out of branches and loops that "
                "depend on the thread index",
                target=self.target,
                unsupported=DIVERGENT_BARRIER,
            )

    def _branch(self, s: S.IfThenElse, group: E.Expr | None) -> S.Stmt:
        if is_thread_condition(s.condition, self.tid) and (tile_level(s.then_case) or (
                s.else_case is not None and tile_level(s.else_case))):  # fmt: skip
            # thread groups: the branch stays for run-thread-groups; its per-thread code runs for the
            # threads that take the side it is on
            then_group = s.condition if group is None else E.logical_and(group, s.condition)
            cases = [self.emit(s.then_case, then_group)]
            if s.else_case is not None:
                other = E.logical_not(s.condition)
                cases.append(self.emit(s.else_case, other if group is None else E.logical_and(group, other)))
            return dataclasses.replace(s, then_case=cases[0], else_case=cases[1] if len(cases) > 1 else None)
        self.uniform(s, s.condition, "a branch whose condition")
        then_case = self.emit(s.then_case, group)
        else_case = None if s.else_case is None else self.emit(s.else_case, group)
        return dataclasses.replace(s, condition=self.rewrite.mutate(s.condition), then_case=then_case,
                                   else_case=else_case)  # fmt: skip

    def _let(self, s: S.LetStmt, group: E.Expr | None) -> S.Stmt:
        if not self.varying.expr(s.value) and id(s) not in self.varying.controlled:
            return dataclasses.replace(s, value=self.rewrite.mutate(s.value), body=self.emit(s.body, group))
        values = Buffer(s.var.name, (E.const(self.threads),), s.var.dtype, "local", span=s.span)
        fill = self.loop([S.BufferStore(values, s.value, (self.tid,), span=s.span)], group)
        self.rewrite.values[s.var] = E.BufferLoad(s.var.dtype, values, (self.tid,))
        return S.Allocate(values, S.seq(fill, self.emit(s.body, group)), span=s.span)

    def _allocate(self, s: S.Allocate, group: E.Expr | None) -> S.Stmt:
        buf = s.buffer
        if buf.scope not in PER_THREAD_SCOPES:
            return dataclasses.replace(s, body=self.emit(s.body, group))
        shape = (E.const(self.threads), *buf.shape)
        self.rewrite.buffers[id(buf)] = Buffer(buf.name, shape, buf.dtype, "local", span=buf.span)
        return S.Allocate(self.rewrite.buffers[id(buf)], self.emit(s.body, group), span=s.span)


def _sub_statements(s: S.Stmt) -> list[S.Stmt]:
    out: list[S.Stmt] = []
    for c in children(s):
        if isinstance(c, S.Stmt):
            out.append(c)
        elif isinstance(c, tuple):
            out.extend(x for x in c if isinstance(x, S.Stmt))
    return out


def _run_work_items(launch: S.KernelLaunch, target) -> S.Stmt:
    if not launch.thread_vars or not WorkItems(launch, target).needed():
        return launch
    body, _ = Barriers(launch, tile_op_accesses).run(launch.body, State())
    return WorkItems(dataclasses.replace(launch, body=body), target).run()


@module_pass("run-work-items")
def run_work_items(mod: IRModule, ctx) -> IRModule:
    """Per-thread code runs in loops over the block's threads, split at barriers (those the shared-memory
    hazards need included) and at the statements the block runs once; per-thread storage that lives across
    a split is an array over the threads."""
    return map_launches(mod, lambda launch: _run_work_items(launch, ctx.target))
