"""Passes that map TileLang's block-of-threads model onto one CPU thread per block."""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, free_vars
from tilecraft.transform.thread_groups import ThreadGroup, is_thread_condition, taking_threads


class _ThreadUse(Visitor):
    """Finds the first statement that reads a thread index."""

    def __init__(self, thread_vars) -> None:
        self.thread_ids = {id(v) for v in thread_vars}
        self.span = None
        self.found = None

    def visit(self, node) -> None:
        if self.found is not None:
            return
        saved = self.span
        if isinstance(node, S.Stmt) and node.span is not None:
            self.span = node.span
        super().visit(node)
        self.span = saved

    def visit_Var(self, v) -> None:
        if id(v) in self.thread_ids and self.found is None:
            self.found = self.span


class _BlockModelCheck(Visitor):
    def __init__(self, target) -> None:
        self.target = target

    def visit_KernelLaunch(self, launch: S.KernelLaunch) -> None:
        use = _ThreadUse(launch.thread_vars)
        use.visit(launch.body)
        if use.found is not None:
            raise LoweringError(
                "this kernel reads a thread index (T.get_thread_binding) where the CPU target's work-item "
                "loops (run-work-items) and thread groups (run-thread-groups) left it, which the CPU target "
                "cannot honour",
                use.found,
                "a block runs as one thread on the CPU; report the kernel, or express the per-thread work as "
                "T.Parallel over the tile so the backend partitions it",
                target=self.target,
            )
        self.generic_visit(launch)


class _RunThreadGroups(BufferKeepingMutator):
    """`if T.get_thread_binding() < 32: A else: B` splits the block's threads into two groups, each running
    its branch as tile-level code (TileLang partitions the branch's T.Parallel loops over its group). The
    groups run concurrently and cannot synchronize with each other, so one CPU thread runs A, then B: every
    branch some thread of the block takes, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.extents: dict[int, int] = {}

    def mutate_KernelLaunch(self, launch: S.KernelLaunch) -> S.Stmt:
        saved = self.extents
        self.extents = {id(v): n for v, n in zip(launch.thread_vars, launch.threads)}
        out = self.generic_mutate(launch)
        self.extents = saved
        return out

    def mutate_IfThenElse(self, s: S.IfThenElse) -> S.Stmt:
        s = self.generic_mutate(s)
        taken = self._branches_taken(s.condition)
        if taken is None:
            return s
        then_taken, else_taken = taken
        return S.seq(s.then_case if then_taken else None, s.else_case if else_taken else None)

    def _branches_taken(self, cond: E.Expr) -> tuple[bool, bool] | None:
        """Whether some thread takes the then / else branch, for a condition on one thread index alone
        (`tx < 32`, T.ws's `tx >= 128 and tx < 256`); else None."""
        variables = free_vars(cond)
        if len(variables) != 1 or id(variables[0]) not in self.extents:
            return None
        tid = variables[0]
        if not is_thread_condition(cond, tid):
            return None
        taken, others = taking_threads(cond, tid, ThreadGroup(0, self.extents[id(tid)]))
        return bool(taken), bool(others)


@module_pass("run-thread-groups")
def run_thread_groups(mod: IRModule, ctx) -> IRModule:
    """Branches on `thread index <op> constant` (thread groups) run one after the other, as one thread."""
    mutator = _RunThreadGroups()
    return mod.with_functions(f.with_body(mutator.mutate(f.body)) for f in mod.functions)


@module_pass("check-block-model")
def check_block_model(mod: IRModule, ctx) -> IRModule:
    """Kernels do not depend on thread indices (a check: the passes before it leave none)."""
    checker = _BlockModelCheck(ctx.target)
    for func in mod.functions:
        for p in func.params:
            checker.visit(p)
        checker.visit(func.body)
    return mod


class _DropHints(BufferKeepingMutator):
    def mutate_UseSwizzle(self, s: S.UseSwizzle) -> S.Stmt:
        return S.SeqStmt(())

    def mutate_For(self, s: S.For) -> S.Stmt:
        s = self.generic_mutate(s)
        if s.kind is S.ForKind.PIPELINED:
            return dataclasses.replace(s, kind=S.ForKind.SERIAL, annotations=())
        return s

    def mutate_Evaluate(self, s: S.Evaluate) -> S.Stmt:
        value = s.value
        if getattr(value, "op", None) == "sync_threads":
            return S.SeqStmt(())
        return s


@module_pass("apply-block-model")
def apply_block_model(mod: IRModule, ctx) -> IRModule:
    """Rasterization hints are dropped, pipelined loops are serial, barriers are no-ops."""
    mutator = _DropHints()
    return mod.with_functions(f.with_body(mutator.mutate(f.body)) for f in mod.functions)
