"""Which values and statements of a kernel may differ between the threads of a block.

TileLang kernels mix tile-level code, which a block's threads run together, with per-thread (SIMT) code
that reads `T.get_thread_binding()`. A statement outside `T.Parallel` that computes the same thing on
every thread (a scalar atomic of a uniform value, say) is done once per block; one whose operands differ
between threads is done by each thread. This is the classic divergence analysis, to a fixed point:

* the thread index varies; so does a loop variable whose bounds vary, a `LetStmt` bound to a varying
  value, and a load at a varying index;
* per-thread storage (`T.alloc_local`, `T.alloc_var`) varies once some thread may store a different
  value into it than another: a varying value or index, or a store under varying control;
* control varies inside a branch or `while` on a varying condition and a loop with varying bounds, except
  a branch on the thread index alone whose sides run tile-level code (thread groups,
  transform/thread_groups.py): such a side is the tile-level code of its group, which runs it together.

Shared and global memory is not tracked: a load of it varies only through its index (every thread sees
the same element once a barrier separates the store from the loads).
"""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.op import RNG_CALLS
from tilecraft.ir.visitor import children, sub_statements, walk
from tilecraft.transform.thread_groups import is_thread_condition, tile_level

PER_THREAD_SCOPES = ("local", "local.var")


class ThreadVarying:
    """The varying values of one launch; ask `expr(e)`, `stmt(s)` (its own operands or its control vary)
    and `buffer(b)`."""

    def __init__(self, launch: S.KernelLaunch) -> None:
        self.vars: set[int] = {id(v) for v in launch.thread_vars}
        self.tid = launch.thread_vars[0] if len(launch.thread_vars) == 1 else None
        self.buffers: set[int] = set()
        self.controlled: set[int] = set()  # statements under varying control
        self._changed = True
        while self._changed:
            self._changed = False
            self._stmt(launch.body, False)

    # ------------------------------------------------------------------ queries

    def expr(self, e) -> bool:
        """Whether `e` (an expression, a region or a tuple of them) may differ between threads."""
        for n in walk(e):
            if isinstance(n, E.Var) and id(n) in self.vars:
                return True
            if isinstance(n, E.Call) and n.op in RNG_CALLS:  # each thread draws from its own generator
                return True
            if isinstance(n, E.BufferLoad) and id(n.buffer) in self.buffers:
                return True
            if isinstance(n, BufferRegion) and id(n.buffer) in self.buffers:
                return True
        return False

    def buffer(self, buf: Buffer) -> bool:
        return id(buf) in self.buffers

    def stmt(self, s: S.Stmt) -> bool:
        """Whether `s` runs under varying control or reads a varying value (its sub-statements included)."""
        return id(s) in self.controlled or self.operands(s)

    def operands(self, s: S.Stmt) -> bool:
        """Whether `s` reads a varying value or names per-thread storage that varies (whatever its control)."""
        return self.expr(_operands(s))

    def per_thread_tile_op(self, op: S.TileOp) -> bool:
        """Whether a tile op is per-thread code, done whole by each thread that runs it: it names a thread's
        own storage (T.alloc_local / T.alloc_var) or values that differ between threads; a scalar atomic
        also when the control around it differs. Any other tile op is the block's (or its thread
        group's) tile-level code, even under a condition that differs between threads."""
        if isinstance(op, S.AtomicOp) and not isinstance(op.value, BufferRegion):
            return self.stmt(op)
        regions = [n for n in walk(op) if isinstance(n, BufferRegion)]
        return any(r.buffer.scope in PER_THREAD_SCOPES for r in regions) or self.operands(op)

    # ------------------------------------------------------------------ the fixed point

    def _group_branch(self, s: S.IfThenElse) -> bool:
        """A branch on the thread index alone whose sides run tile-level code: the thread groups' split,
        not per-thread control."""
        if self.tid is None or not is_thread_condition(s.condition, self.tid):
            return False
        return tile_level(s.then_case) or (s.else_case is not None and tile_level(s.else_case))

    def _mark_var(self, v: E.Var) -> None:
        if id(v) not in self.vars:
            self.vars.add(id(v))
            self._changed = True

    def _mark_buffer(self, buf: Buffer) -> None:
        if buf.scope in PER_THREAD_SCOPES and id(buf) not in self.buffers:
            self.buffers.add(id(buf))
            self._changed = True

    def _stmt(self, s: S.Stmt, varying: bool) -> None:
        if varying:
            self.controlled.add(id(s))
        if isinstance(s, S.SeqStmt):
            for child in s.stmts:
                self._stmt(child, varying)
        elif isinstance(s, S.For):
            bounds = self.expr((s.min, s.extent))
            if bounds or varying:
                self._mark_var(s.loop_var)
            self._stmt(s.body, varying or bounds)
        elif isinstance(s, S.While):
            self._stmt(s.body, varying or self.expr(s.condition))
        elif isinstance(s, S.IfThenElse):
            inner = varying or (self.expr(s.condition) and not self._group_branch(s))
            self._stmt(s.then_case, inner)
            if s.else_case is not None:
                self._stmt(s.else_case, inner)
        elif isinstance(s, S.LetStmt):
            if self.expr(s.value):
                self._mark_var(s.var)
            self._stmt(s.body, varying)
        elif isinstance(s, (S.Allocate, S.KernelLaunch)):
            self._stmt(s.body, varying)
        else:
            for buf in _written(s):
                if varying or self.expr(_operands(s)):
                    self._mark_buffer(buf)
            for child in sub_statements(s):
                self._stmt(child, varying)




def _operands(s: S.Stmt) -> tuple:
    """Everything a statement reads or indexes (its sub-statements included)."""
    return tuple(c for c in children(s) if isinstance(c, (E.Expr, BufferRegion, S.Stmt, tuple)))


def _written(s: S.Stmt) -> list[Buffer]:
    """The buffers a leaf statement stores into (a tile op's destination, an atomic's, a store's, and
    the arrays a call writes through a pointer: an extern function's, a generator's state)."""
    through_pointers = [
        n.args[0].buffer
        for n in walk(s)
        if isinstance(n, E.Call) and n.op == "access_ptr" and "w" in str(n.args[1].value)
    ]
    return _stored(s) + through_pointers


def _stored(s: S.Stmt) -> list[Buffer]:
    if isinstance(s, (S.BufferStore, AtomicUpdate, S.ThreadAllReduce)):
        return [s.buffer]
    dst = getattr(s, "dst", None)
    if isinstance(dst, BufferRegion):
        return [dst.buffer]
    if isinstance(s, S.Gemm):
        return [s.c.buffer]
    return [n.buffer for n in walk(s) if isinstance(n, (S.BufferStore, AtomicUpdate))] + [
        n.target.buffer for n in walk(s) if isinstance(n, E.AtomicValue) and n.kind != "load"
    ]
