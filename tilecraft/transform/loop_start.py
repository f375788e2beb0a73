"""`for k in T.Pipelined(start, end)`: the pipelined loop counts from 0.

A pipeline's stages, rings and phases are indexed by the iteration's position in the loop, and its
prologue issues the first tiles before the loop; a loop that starts at `start` (a causal backward
pass's first key block, `by * block_M // block_N`) computes the same as one over `[0, end - start)`
whose body reads `k + start`. The rewrite binds a start that is not a plain name to one first, so it
is evaluated once, before the loop, as the loop's own bounds are; the loop keeps its name, kind and
annotations. Whether a loop is pipelined then follows from what it computes, not from how its range
is written.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, substitute


class _FromZero(BufferKeepingMutator):
    def mutate_For(self, s: S.For) -> S.Stmt:
        s = self.generic_mutate(s)
        if s.kind is not S.ForKind.PIPELINED or E.const_value(s.min) == 0:
            return s
        return counted_from_zero(s)


def counted_from_zero(loop: S.For) -> S.Stmt:
    """`loop` over `[0, extent)`, its body reading `k + min`; a start that is not a name or a constant
    is bound by a LetStmt around the loop."""
    start, bind = loop.min, None
    if not isinstance(start, (E.Var, E.IntImm)):
        bind = E.Var(start.dtype, f"{loop.loop_var.name}_start")
        start = bind
    k = E.Var(loop.loop_var.dtype, loop.loop_var.name)
    shifted = E.add(k, E.cast(start, k.dtype) if start.dtype != k.dtype else start)
    body = substitute(loop.body, {loop.loop_var: shifted})
    rebuilt = dataclasses.replace(loop, loop_var=k, min=E.const(0, k.dtype), body=body)
    return rebuilt if bind is None else S.LetStmt(bind, loop.min, rebuilt, span=loop.span)


@module_pass("normalize-pipelined-loops")
def normalize_pipelined_loops(mod: IRModule, ctx) -> IRModule:
    """T.Pipelined loops start at 0 (their body reads the loop variable plus the old start)."""
    return mod.with_functions(f.with_body(_FromZero().mutate(f.body)) for f in mod.functions)
