"""Narrow the scopes of a kernel's shared buffers to the statements that use them.

Kernels allocate every shared buffer at the top of `T.Kernel`, so each one is in scope to the end and
storage planning (a stack of nested scopes) can reuse no bytes: a backward-attention kernel whose
loop tiles are dead once its epilogue tiles are written needs the sum of both. This pass moves the
shared allocations of a kernel body's leading chain of `Allocate`s down to the range of top-level
statements from the first one that names the buffer to the last, so that buffers used one after the
other become sibling scopes and share bytes. Ranges that partly overlap are widened until they nest
(scopes form a stack). A shared buffer no statement names is dropped (TVM drops unused allocations;
TileLang's mxfp4 example allocates a bias tile it uses only with a bias). Other allocations (registers) stay where they are, around everything. A scalar
binding (`n = T.min(...)` before a loop: a `LetStmt`) holds every statement after it in its body; where
the target asks (`bindings`), a range that is only such a binding is narrowed again among the
statements of its body.

Loops that list iteration-local buffers (`mark-iteration-local-shared`, which a target whose loops
are never software-pipelined runs on tile operations) get those buffers scoped inside their bodies,
from the first statement of the body that uses one to the last.

The barrier pass already separates a new shared scope from the pending accesses of ended ones (their
bytes may be reused), so the reuse this enables is race-free; the pass must run before it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.visitor import BufferKeepingMutator, map_launches, walk
from tilecraft.transform.iteration_local import ITERATION_LOCAL


@dataclasses.dataclass
class _Scope:
    alloc: S.Allocate
    first: int
    last: int
    children: list[_Scope] = dataclasses.field(default_factory=list)


def narrow_kernel_body(body: S.Stmt, scopes: Sequence[str], bindings: bool = False) -> S.Stmt:
    """`body` with its leading shared allocations (scopes in `scopes`) narrowed to their uses; with
    `bindings`, also inside a scalar binding that is a range's only statement."""
    chain: list[S.Allocate | S.LetStmt] = []
    stmts = _flatten(body)
    while len(stmts) == 1 and isinstance(stmts[0], (S.Allocate, S.LetStmt)):
        chain.append(stmts[0])
        stmts = _flatten(stmts[0].body)
    uses = [{id(n) for n in walk(s) if isinstance(n, Buffer)} for s in stmts]
    movable: list[_Scope] = []
    kept: list[S.Allocate | S.LetStmt] = []  # bindings and other allocations stay around everything
    dropped = False
    for node in chain:
        found = [i for i, used in enumerate(uses) if isinstance(node, S.Allocate) and id(node.buffer) in used]
        if isinstance(node, S.Allocate) and node.buffer.scope in scopes and not found and not _used(node):
            dropped = True  # never used (TileLang's example allocates a bias tile it may not use): no bytes
            continue
        if isinstance(node, S.Allocate) and node.buffer.scope in scopes and found:
            movable.append(_Scope(node, found[0], found[-1]))
        else:
            kept.append(node)
    if len(stmts) < 2 or not movable:
        if not dropped:
            return body  # one statement (or none) uses everything: nothing to narrow
        return _without_unused(body, scopes)
    out = _narrow(stmts, movable, bindings)
    for node in reversed(kept):
        out = dataclasses.replace(node, body=out)
    return out


def _without_unused(stmt: S.Stmt, scopes: Sequence[str]) -> S.Stmt:
    """The leading chain of `stmt` without the shared allocations its statements never name."""
    if isinstance(stmt, S.Allocate) and stmt.buffer.scope in scopes and not _used(stmt):
        return _without_unused(stmt.body, scopes)
    if isinstance(stmt, (S.Allocate, S.LetStmt)):
        return dataclasses.replace(stmt, body=_without_unused(stmt.body, scopes))
    if isinstance(stmt, S.SeqStmt) and len(stmt.stmts) == 1:
        return _without_unused(stmt.stmts[0], scopes)
    return stmt


def _used(alloc: S.Allocate) -> bool:
    """Whether the allocation's body names its buffer: in a node the walk reaches or, since some
    statements hold buffers where the walk does not look (a persistent kernel's), in its printed form."""
    name = alloc.buffer.name
    if any(isinstance(n, Buffer) and n.name == name for n in walk(alloc.body)):
        return True
    from tilecraft.ir.printer import print_ir

    try:
        text = print_ir(alloc.body)
    except Exception:  # noqa: BLE001 - what cannot be printed is kept, as before
        return True
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _narrow(stmts: list[S.Stmt], scopes: list[_Scope], bindings: bool) -> S.Stmt:
    """The statements, each scope around the range from its first use to its last."""
    return _emit(stmts, 0, len(stmts) - 1, _nest(scopes), bindings)


def _uses(stmt: S.Stmt | E.Expr) -> set[int]:
    return {id(n) for n in walk(stmt) if isinstance(n, Buffer)}


def _into_binding(stmt: S.Stmt, scope: _Scope) -> S.Stmt | None:
    """`stmt`, a binding whose body alone uses the scope's buffers, with them narrowed in that body."""
    if not isinstance(stmt, S.LetStmt):
        return None
    allocs = _allocs(scope)
    if _uses(stmt.value) & {id(a.buffer) for a in allocs}:
        return None
    inner = _flatten(stmt.body)
    uses = [_uses(s) for s in inner]
    scopes = []
    for alloc in allocs:
        found = [i for i, used in enumerate(uses) if id(alloc.buffer) in used]
        scopes.append(_Scope(alloc, found[0], found[-1]))
    return dataclasses.replace(stmt, body=_narrow(inner, scopes, True))


def _allocs(scope: _Scope) -> list[S.Allocate]:
    """The allocations of a scope and of the scopes nested in it, outermost first."""
    return [scope.alloc] + [a for child in scope.children for a in _allocs(child)]


def _flatten(stmt: S.Stmt) -> list[S.Stmt]:
    """The statements of nested sequences in order, empty sequences (removed annotations) dropped."""
    if not isinstance(stmt, S.SeqStmt):
        return [stmt]
    return [leaf for child in stmt.stmts for leaf in _flatten(child)]


def _nest(scopes: list[_Scope]) -> list[_Scope]:
    """Scopes as a forest in which siblings do not overlap: a range that starts inside an open scope
    and ends after it widens that scope (and its ancestors) to its end."""
    roots: list[_Scope] = []
    stack: list[_Scope] = []
    for scope in sorted(scopes, key=lambda s: (s.first, -s.last)):
        while stack and stack[-1].last < scope.first:
            stack.pop()
        for open_scope in stack:
            open_scope.last = max(open_scope.last, scope.last)
        (stack[-1].children if stack else roots).append(scope)
        stack.append(scope)
    return roots


def _emit(stmts: list[S.Stmt], lo: int, hi: int, scopes: list[_Scope], bindings: bool) -> S.Stmt:
    """Statements lo..hi (inclusive), each scope wrapped around its own range."""
    out: list[S.Stmt] = []
    at = lo
    for scope in scopes:
        out.extend(stmts[at : scope.first])
        binding = _into_binding(stmts[scope.first], scope) if bindings and scope.first == scope.last else None
        if binding is not None:
            out.append(binding)
        else:
            body = _emit(stmts, scope.first, scope.last, scope.children, bindings)
            out.append(dataclasses.replace(scope.alloc, body=body))
        at = scope.last + 1
    out.extend(stmts[at : hi + 1])
    return out[0] if len(out) == 1 else S.SeqStmt(tuple(out))


class _IntoLoops(BufferKeepingMutator):
    """Buffers a loop lists as iteration-local (`mark-iteration-local-shared`) move from their
    allocation outside it to the range of its body's statements that use them."""

    def __init__(self, allocs: dict[int, S.Allocate]) -> None:
        super().__init__()
        self.allocs = allocs

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        return self.mutate(s.body) if id(s.buffer) in self.allocs else self.generic_mutate(s)

    def mutate_For(self, loop: S.For) -> S.Stmt:
        loop = self.generic_mutate(loop)
        local = S.annotation(loop.annotations, ITERATION_LOCAL)
        if local is None:
            return loop
        annotations = tuple((k, v) for k, v in loop.annotations if k != ITERATION_LOCAL)
        stmts = _flatten(loop.body)
        uses = [_uses(s) for s in stmts]
        scopes = []
        for buf in local:
            found = [i for i, used in enumerate(uses) if id(buf) in used]
            if found and id(buf) in self.allocs:  # a buffer the lowering dropped needs no bytes
                scopes.append(_Scope(self.allocs[id(buf)], found[0], found[-1]))
        body = _narrow(stmts, scopes, True) if scopes else loop.body
        return dataclasses.replace(loop, body=body, annotations=annotations)


def narrow_into_loops(body: S.Stmt, scopes: Sequence[str]) -> S.Stmt:
    """`body` with the iteration-local shared buffers of its loops scoped inside the loops' bodies."""
    local = {id(b) for n in walk(body) if isinstance(n, S.For)
             for b in S.annotation(n.annotations, ITERATION_LOCAL) or ()}  # fmt: skip
    allocs = {id(n.buffer): n for n in walk(body)
              if isinstance(n, S.Allocate) and id(n.buffer) in local and n.buffer.scope in scopes}  # fmt: skip
    return _IntoLoops(allocs).mutate(body) if local else body


def _narrow_launch(launch: S.KernelLaunch, scopes: tuple[str, ...], bindings: bool) -> S.Stmt:
    body = narrow_kernel_body(launch.body, scopes, bindings)
    return dataclasses.replace(launch, body=narrow_into_loops(body, scopes))


def narrow_shared_scopes(scopes: Sequence[str] = ("shared", "shared.dyn"), bindings: bool = False):
    """The `narrow-shared-scopes` pass for the given storage scopes; `bindings` narrows inside scalar
    bindings too. That can give an epilogue tile the bytes of a loop's tiles where a binding held both,
    so it is only for a target whose barrier pass sees every access to those tiles (a barrier pass that
    leaves a software pipeline's tiles to the pipeline does not separate their reuse after the loop)."""

    @module_pass("narrow-shared-scopes")
    def run(mod, ctx):
        """Each kernel's shared buffers are in scope only from their first to their last use, so
        buffers used one after the other share bytes."""
        return map_launches(mod, lambda launch: _narrow_launch(launch, tuple(scopes), bindings))

    return run
