"""Passes that map TileLang's block-of-threads model onto one CPU thread per block."""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator, Visitor

UNSUPPORTED_DTYPE_KINDS = ("float8",)


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
                "this kernel reads a thread index (T.get_thread_binding), which the CPU target cannot honour",
                use.found,
                "a block runs as one thread on the CPU; express per-thread work as T.Parallel over the tile "
                "so the backend partitions it",
                target=self.target,
            )
        self.generic_visit(launch)

    def visit_Buffer(self, buf) -> None:
        if buf.dtype.kind in UNSUPPORTED_DTYPE_KINDS:
            raise LoweringError(
                f"buffer {buf.name} has dtype {buf.dtype}, which the CPU target does not support",
                buf.span,
                "use float16, bfloat16 or float32 on the CPU target",
                target=self.target,
            )
        self.generic_visit(buf)


@module_pass("check-block-model")
def check_block_model(mod: IRModule, ctx) -> IRModule:
    """Kernels do not depend on thread indices and use only dtypes the CPU target computes."""
    checker = _BlockModelCheck(ctx.target)
    for func in mod.functions:
        for p in func.params:
            checker.visit(p)
        checker.visit(func.body)
    return mod


class _DropHints(Mutator):
    def mutate_Buffer(self, buf):
        return buf

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
