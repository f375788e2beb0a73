"""Mark the shared buffers whose contents live for one loop iteration, so their scopes can be narrowed
inside the loop's body.

A shared buffer used only inside a loop, whose first use in the body (at its top level, so in every
iteration) is a tile operation that writes all of it and reads nothing of it (`T.copy` into the whole
buffer, `T.fill`), never carries a value from one iteration to the next: between its last use in an
iteration and that write in the next one its bytes hold nothing anyone reads. The loop is annotated
with such buffers (`ITERATION_LOCAL`), innermost loop first, and `narrow-shared-scopes` then scopes each
one from its first to its last statement of the body, so that what the lowering adds in between (the
scratch of cross-thread reductions, a staged operand) reuses its bytes.

It must run on tile operations (before `lower-to-threads`), where a whole-buffer write is visible, and
only for a target whose pipelined loops stay plain loops: a software pipeline's copies of the next
iteration's tile are in flight while the current one is used, so that tile is not iteration-local.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, map_launches, walk

ITERATION_LOCAL = "iteration_local_shared"
SHARED = ("shared", "shared.dyn")
LOOP_KINDS = (S.ForKind.SERIAL, S.ForKind.PIPELINED, S.ForKind.UNROLLED)


def _references(node) -> Counter:
    """How many times each shared buffer is named under `node` (its allocations included)."""
    return Counter(id(n) for n in walk(node) if isinstance(n, Buffer) and n.scope in SHARED)


def _whole(region: BufferRegion) -> bool:
    """Whether the region is all of its buffer (static extents equal to the static shape)."""
    if len(region.ranges) != len(region.buffer.shape):
        return False
    for r, dim in zip(region.ranges, region.buffer.shape):
        extent = E.const_value(dim)
        if extent is None or E.const_value(r.min) != 0 or E.const_value(r.extent) != extent:
            return False
    return True


def _overwritten(stmt: S.Stmt) -> Buffer | None:
    """The shared buffer `stmt` writes whole without reading it, if it is such a tile operation."""
    if isinstance(stmt, S.Copy):
        region, reads = stmt.dst, stmt.src
    elif isinstance(stmt, S.Fill):
        region, reads = stmt.dst, stmt.value
    else:
        return None
    buf = region.buffer
    if buf.scope not in SHARED or not _whole(region) or id(buf) in _references(reads):
        return None
    return buf


def _flatten(stmt: S.Stmt) -> list[S.Stmt]:
    if not isinstance(stmt, S.SeqStmt):
        return [stmt]
    return [leaf for child in stmt.stmts for leaf in _flatten(child)]


class _Mark(BufferKeepingMutator):
    def __init__(self, totals: Counter) -> None:
        super().__init__()
        self.totals = totals  # references in the whole kernel, its allocation included
        self.marked: set[int] = set()

    def mutate_For(self, loop: S.For) -> S.Stmt:
        loop = self.generic_mutate(loop)  # inner loops first: the narrowest loop gets the buffer
        if loop.kind not in LOOP_KINDS:
            return loop
        inside = _references(loop.body)
        seen: set[int] = set()
        local: list[Buffer] = []
        for stmt in _flatten(loop.body):
            written = _overwritten(stmt)
            # written before any other use here, and named only here and by its allocation outside
            if (written is not None and id(written) not in seen and id(written) not in self.marked
                    and inside[id(written)] == self.totals[id(written)] - 1):  # fmt: skip
                local.append(written)
                self.marked.add(id(written))
            seen |= set(_references(stmt))
        if not local:
            return loop
        return dataclasses.replace(loop, annotations=(*loop.annotations, (ITERATION_LOCAL, tuple(local))))


def _mark(launch: S.KernelLaunch) -> S.Stmt:
    allocated = {id(n.buffer) for n in walk(launch.body) if isinstance(n, S.Allocate)}
    totals = _references(launch.body)
    # a buffer allocated outside the kernel body (or twice) is left alone
    totals = Counter({k: v for k, v in totals.items() if k in allocated})
    return dataclasses.replace(launch, body=_Mark(totals).mutate(launch.body))


def mark_iteration_local(mod: IRModule) -> IRModule:
    """`mod` with each loop listing the shared buffers its iterations write whole before using them."""
    return map_launches(mod, _mark)


@module_pass("mark-iteration-local-shared")
def mark_iteration_local_shared(mod: IRModule, ctx) -> IRModule:
    """Loops list the shared buffers each iteration writes whole before it uses them."""
    return mark_iteration_local(mod)
