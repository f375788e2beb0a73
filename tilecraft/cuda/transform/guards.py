"""The body of a `T.Pipelined` loop as the pipeline sees it: lets, an optional guard, the statements.

    for k in T.Pipelined(n, num_stages=s):
        i_s = BlockIndices[by, k] * BS          # lets, evaluated every iteration
        if BlockMask[by, bx, k]:                # the guard: the iterations that load and compute
            T.copy(A[...], A_shared)
            T.copy(B[...], B_shared)
            T.gemm(A_shared, B_shared, C_local)

A loop whose copies sit under such a branch (block-sparse GEMM, NSA's selected blocks) pipelines when
everything the producer must compute alone, the lets and the condition, is provably the same for every
thread of the block: it may read the block indices, the loop variable, the kernel's scalars, lets and
serial loops of uniform values above the loop, and global memory that no statement of the kernel
writes, at such indices. It may not read the thread index (nor values bound from it), on-chip buffers
(a register or shared value is not known to be one value for the block), nor call functions.
A condition that does not qualify keeps the loop synchronous (`guard_refusal` says why).

The pipelines (pipeline.py) keep their rings matched by counting the iterations the guard takes:
the warp-specialized producer and consumers each count them and use count c in place of k for the
stage (c % s) and the phase (c / s), so the ring holds only the tiles that are loaded; the pipelines
without a producer keep their stages on k and skip the copy and the consumer of an iteration that is
not taken (each consumer's wait then matches exactly the copies issued into its stage).
"""

from __future__ import annotations

import dataclasses

from tilecraft.cuda.ir import AsyncCopy, TmaCopy, TmaLoad, VectorCopy, VectorLoad
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.printer import expr_to_str
from tilecraft.ir.visitor import Visitor, children, substitute, walk

COUNTER_SCOPE = "local.var"


@dataclasses.dataclass(frozen=True)
class LoopBody:
    """A pipelined loop's body: `lets` (outermost first) around `stmts`, which run where `condition`
    holds (None: in every iteration)."""

    lets: tuple[tuple[E.Var, E.Expr], ...]
    condition: E.Expr | None
    stmts: tuple[S.Stmt, ...]

    @property
    def guarded(self) -> bool:
        return self.condition is not None

    def wrap(self, body: S.Stmt) -> S.Stmt:
        """`body` inside the loop's lets."""
        for var, value in reversed(self.lets):
            body = S.LetStmt(var, value, body)
        return body

    def values(self, loop_var: E.Var, step: E.Expr) -> dict[E.Var, E.Expr]:
        """The lets' values at iteration `step`, each in terms of the variables above the loop, and the
        loop variable's: substituted into a statement of the body, they make it iteration `step`'s."""
        values: dict[E.Var, E.Expr] = {loop_var: step}
        for var, value in self.lets:
            values[var] = substitute(value, values)
        return values

    def taken(self, loop_var: E.Var, step: E.Expr) -> E.Expr:
        """Whether iteration `step` runs the statements (true for a loop without a guard)."""
        if self.condition is None:
            return E.const(True)
        return substitute(self.condition, self.values(loop_var, step))


def loop_body(loop: S.For) -> LoopBody:
    """The loop's body split into lets, guard and statements. The branch counts as a guard when it holds
    an asynchronous copy (TMA or cp.async) and has no else; any other body is its own statements."""
    lets: list[tuple[E.Var, E.Expr]] = []
    body = loop.body
    while isinstance(body, S.LetStmt):
        lets.append((body.var, body.value))
        body = body.body
    inner = body.stmts[0] if isinstance(body, S.SeqStmt) and len(body.stmts) == 1 else body
    if isinstance(inner, S.IfThenElse) and inner.else_case is None and _copies(inner.then_case):
        return LoopBody(tuple(lets), inner.condition, _stmts(inner.then_case))
    return LoopBody(tuple(lets), None, _stmts(body))


def _stmts(body: S.Stmt) -> tuple[S.Stmt, ...]:
    return tuple(body.stmts) if isinstance(body, S.SeqStmt) else (body,)


def _copies(s: S.Stmt) -> bool:
    return any(isinstance(n, (AsyncCopy, TmaCopy)) for n in walk(s))


def has_guard(loop: S.For) -> bool:
    """The loop's copies and other code are under a branch that `loop_body` does not take as a guard (it
    has an else, or other statements beside it). A branch of copies only is a conditional copy, which
    the pipelines handle as a copy."""
    body = loop.body
    while isinstance(body, S.LetStmt):
        body = body.body
    return any(isinstance(s, S.IfThenElse) and _copies(s) and not _copies_only(s) for s in _stmts(body))


def _copies_only(s: S.Stmt) -> bool:
    leaves = [n for n in walk(s) if isinstance(n, S.Stmt)
              and not isinstance(n, (S.For, S.IfThenElse, S.SeqStmt, TmaLoad))]  # fmt: skip
    return all(isinstance(n, (AsyncCopy, TmaCopy)) for n in leaves)


def guard_refusal(launch: S.KernelLaunch, loop: S.For) -> str | None:
    """Why the loop's lets and guard (`loop_body`) are not provably uniform across the block's threads
    (None: they are, or the loop has neither). `loop` is the launch's own statement (found by identity)."""
    body = loop_body(loop)
    if not body.guarded and has_guard(loop):
        return "its copies are under a branch with an else, or beside other statements"
    if not body.lets and not body.guarded:
        return None
    written = written_buffers(launch.body)
    varying = _varying_above(launch, loop, written)
    for var, value in body.lets:
        reason = _varying_reason(value, varying, written)
        if reason is not None:
            return f"its let {var.name} is not provably the same for every thread of the block: it {reason}"
    if body.guarded:
        reason = _varying_reason(body.condition, varying, written)
        if reason is not None:
            return (f"the condition around its copies ({_text(body.condition)}) is not provably the same for "
                    f"every thread of the block: it {reason}")  # fmt: skip
    return None


def _text(e: E.Expr) -> str:
    return expr_to_str(e)


def _varying_reason(e: E.Expr, varying: set[int], written: set[Buffer]) -> str | None:
    """Why `e` may differ between the block's threads (None: it cannot)."""
    for n in walk(e):
        if isinstance(n, E.Var) and id(n) in varying:
            return f"depends on the thread index (through {n.name})"
        if isinstance(n, E.BufferLoad):
            buf = n.buffer
            if buf.scope != "global":
                return (f"reads {buf.name}, a {buf.scope} buffer (only global memory that the kernel does "
                        "not write is known to hold one value for the whole block)")  # fmt: skip
            if (buf.base or buf) in written:
                return f"reads {buf.name}, which the kernel writes"
        if isinstance(n, E.Call):
            return f"calls {n.op} (not known to give every thread the same value)"
    return None


def _varying_above(launch: S.KernelLaunch, loop: S.For, written: set[Buffer]) -> set[int]:
    """The variables (ids) bound between the launch and the loop whose values may differ between the
    block's threads: the thread indices, lets of such values and loops with such bounds."""
    path = statement_path(launch.body, loop)
    assert path is not None, "guard_refusal takes the launch's own loop"
    varying = {id(v) for v in launch.thread_vars}
    for s in path[:-1]:
        if isinstance(s, S.LetStmt) and _varying_reason(s.value, varying, written):
            varying.add(id(s.var))
        elif isinstance(s, S.For) and any(_varying_reason(e, varying, written) for e in (s.min, s.extent)):
            varying.add(id(s.loop_var))
    return varying


def statement_path(node, target) -> list[S.Stmt] | None:
    """The statements from `node` down to `target`, both included (None: not below `node`)."""
    if node is target:
        return [node]
    for child in children(node) if isinstance(node, S.Stmt) else ():
        for item in child if isinstance(child, tuple) else (child,):
            found = statement_path(item, target) if isinstance(item, S.Stmt) else None
            if found is not None:
                return [node, *found]
    return None


def written_buffers(body: S.Stmt) -> set[Buffer]:
    """The global buffers `body` may write (a view's base for a view): every buffer that appears anywhere
    but where lowered code reads it (a load, the source of a copy), so a statement this module does not
    know counts as a write."""
    finder = _Writes()
    finder.visit(body)
    return {b for b in finder.written if b.scope == "global"}


class _Writes(Visitor):
    def __init__(self) -> None:
        self.written: set[Buffer] = set()

    def visit_Buffer(self, node: Buffer) -> None:
        self.written.add(node.base if node.base is not None else node)

    def visit_BufferLoad(self, node: E.BufferLoad) -> None:
        self.visit(node.indices)

    def _source_read(self, node, source: str) -> None:
        for field in dataclasses.fields(node):
            if field.name not in (source, "span"):
                self.visit(getattr(node, field.name))

    def visit_AsyncCopy(self, node: AsyncCopy) -> None:
        self._source_read(node, "src")

    def visit_VectorCopy(self, node: VectorCopy) -> None:
        self._source_read(node, "src")

    def visit_VectorLoad(self, node: VectorLoad) -> None:
        self._source_read(node, "src")

    def visit_TmaLoad(self, node: TmaLoad) -> None:
        self._source_read(node, "src")


def counter(name: str) -> Buffer:
    """A scalar that counts the iterations a guard takes (one per role of a warp-specialized loop)."""
    return Buffer(name, (E.const(1),), dt.int32, COUNTER_SCOPE)


def counted(count: Buffer, taken: E.Var, condition: E.Expr, body: S.Stmt) -> S.Stmt:
    """`if condition: taken = count; count += 1; body`: `body` sees in `taken` how many iterations were
    taken before this one."""
    bump = S.BufferStore(count, E.add(taken, 1), (E.const(0),))
    return S.IfThenElse(
        condition, S.LetStmt(taken, E.BufferLoad(dt.int32, count, (E.const(0),)), S.seq(bump, body))
    )


def counting(count: Buffer, loop: S.Stmt) -> S.Stmt:
    """The counter allocated and zeroed around `loop`."""
    return S.Allocate(count, S.seq(S.BufferStore(count, E.const(0), (E.const(0),)), loop))
