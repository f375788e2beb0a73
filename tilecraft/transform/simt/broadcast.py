"""Reads of fragment elements the reading thread does not hold, made legal for SIMT targets.

Layout inference keeps most fragment reads thread-local; the rest (a row vector read across a tile the
nest partitions otherwise, an index that does not follow the layout, a read outside any T.Parallel
nest) are broadcast through shared memory: right before the nest or statement that reads, the
fragment's owners store it into a shared copy (one thread of each group of replicas), and the remote
reads load from the copy. `insert-barriers` separates the stores from the reads. Under a branch or loop
whose condition depends on the thread no barrier can be placed, so a broadcast there is an error.

`RemoteReads` is a mixin of `LowerToThreads`, which supplies `ctx`, `nest`, `mutate` and
`_local_register` (the reading thread's register of an element, or None).
"""

from __future__ import annotations

import contextlib
import dataclasses

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.visitor import free_vars
from tilecraft.transform.simt.copy import with_layout
from tilecraft.transform.tile_loops import make_loop_vars
from tilecraft.transform.tile_loops import parallel_nest as parallel_loops

FRAGMENT = "local.fragment"

Copies = dict[int, tuple[Buffer, Buffer]]


class RemoteReads:
    """Broadcasts of fragments through shared memory, for the reads that need them."""

    def _init_remote_reads(self) -> None:
        # Fragments whose remote elements are read from a shared copy in the code being lowered:
        # id(fragment) -> (fragment, copy).
        self.staged: Copies = {}
        # Depth of branches and loops whose condition depends on the thread: no barrier can go there.
        self.divergent = 0

    @contextlib.contextmanager
    def _branch(self, condition):
        thread_dependent = any(id(v) == id(self.ctx.thread) for v in free_vars(condition))
        self.divergent += thread_dependent
        try:
            yield
        finally:
            self.divergent -= thread_dependent

    def _scalar_statement(self, s: S.Stmt) -> S.Stmt:
        """A statement outside T.Parallel nests whose own expressions may read remote fragment elements:
        those fragments are broadcast right before it."""
        copies = self._shared_copies(self._remote_reads(own_expressions(s)), s.span)
        if not copies:
            return self.mutate_plain(s)
        changes = {}
        for name, old in fields(s):
            if isinstance(old, S.Stmt):
                with self._branch(s.condition if isinstance(s, S.IfThenElse) else ()):
                    new = self.mutate(old)
            else:
                with self._staging(copies):
                    new = self.mutate(old)
            if new is not old:
                changes[name] = new
        lowered = dataclasses.replace(s, **changes) if changes else s
        return self._broadcast(copies, lowered, s.span)

    def _remote_reads(self, node) -> list[Buffer]:
        """Fragments `node` reads at elements the reading thread may not hold (in the current nest;
        nests inside `node` are judged when they are lowered)."""
        found: dict[int, Buffer] = {}
        for load in loads_outside_nests(node):
            buf = load.buffer
            if (
                buf.scope == FRAGMENT
                and id(buf) not in found
                and self._local_register(buf, load.indices) is None
            ):
                found[id(buf)] = buf
        return list(found.values())

    def _shared_copies(self, fragments: list[Buffer], span) -> Copies:
        """A shared copy for each fragment that must be broadcast."""
        copies = {}
        for buf in fragments:
            if self.divergent:
                self.ctx.fail(
                    f"fragment {buf.name} is read by threads that do not hold the element, inside a branch or "
                    "loop whose condition depends on the thread index; the value would pass through shared "
                    "memory with a barrier, and no barrier can be placed there",
                    span,
                    "read the fragment before the branch (into a fragment the reading loop partitions the same "
                    "way, or a shared buffer with T.copy)",
                )
            shape = tuple(E.const(d) for d in self.ctx.layout(buf, span).shape)
            copy = Buffer(f"{buf.name}_shared{self.ctx.fresh}", shape, buf.dtype, "shared.dyn", span=buf.span)
            self.ctx.fresh += 1
            copies[id(buf)] = (buf, copy)
        return copies

    @contextlib.contextmanager
    def _staging(self, copies: Copies):
        saved = self.staged
        self.staged = {**saved, **copies}
        try:
            yield
        finally:
            self.staged = saved

    def _broadcast(self, copies: Copies, reader: S.Stmt, span) -> S.Stmt:
        """`reader` preceded by the owners' stores of each fragment into its shared copy (one thread of
        each group of replicas stores; `insert-barriers` puts a barrier before the reads)."""
        if not copies:
            return reader
        stores = []
        for frag, copy in copies.values():
            layout = self.ctx.layout(frag, span)
            loop_vars = make_loop_vars(len(layout.shape), "b")
            element = E.BufferLoad(frag.dtype, frag, tuple(loop_vars))
            body = S.BufferStore(copy, element, tuple(loop_vars), span=span)
            nest = parallel_loops(loop_vars, [E.const(d) for d in layout.shape], body, span)
            stores.append(self.mutate(with_layout(nest, layout)))
        out = S.seq(*stores, reader)
        for _, copy in copies.values():
            out = S.Allocate(copy, out, span=span)
        return out


# Statements without T.Parallel semantics whose own expressions may read fragments.
SCALAR_STATEMENTS = (S.BufferStore, S.Evaluate, S.LetStmt, S.IfThenElse, S.Print)


def fields(s: S.Stmt):
    for f in dataclasses.fields(s):
        value = getattr(s, f.name)
        if f.name != "span" and isinstance(value, (E.Expr, S.Stmt, tuple)):
            yield f.name, value


def own_expressions(s: S.Stmt) -> tuple:
    """The expressions a statement evaluates itself (not those of the statements it contains)."""
    return tuple(value for _, value in fields(s) if not isinstance(value, S.Stmt))


def loads_outside_nests(node):
    """The loads under `node`, without descending into T.Parallel nests it contains."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
        elif isinstance(item, S.For) and item.kind is S.ForKind.PARALLEL and item is not node:
            continue
        elif isinstance(item, E.BufferLoad):
            yield item
            stack.extend(item.indices)
        elif isinstance(item, (E.Expr, S.Stmt)):
            stack.extend(value for _, value in fields(item))
