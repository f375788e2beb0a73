"""`stage-simdgroup-gemms`: a gemm whose C is a fragment goes through a threadgroup tile of C, so the
simdgroup_matrix path can take it (op/gemm.py says why), where the tile fits the target's threadgroup
memory next to what the kernel already holds there; otherwise it stays in registers (the FMA loop)."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import Mutator, walk
from tilecraft.metal.op.gemm import FRAGMENT, simdgroup_fits, staged
from tilecraft.transform.simt.gemm import gemm_shape
from tilecraft.transform.storage_budget import check_storage_budgets
from tilecraft.transform.target_support import storage_budgets
from tilecraft.transform.tile_loops import whole_region

SHARED = ("shared", "shared.dyn")


class _Replace(Mutator):
    def __init__(self, old: S.Gemm, new: S.Stmt) -> None:
        super().__init__()
        self.old, self.new = old, new

    def mutate_Gemm(self, s: S.Gemm) -> S.Stmt:
        return self.new if s is self.old else s


def _candidates(func: PrimFunc, target) -> list[tuple[S.Gemm, S.Stmt]]:
    found = []
    for launch in walk(func.body):
        if not isinstance(launch, S.KernelLaunch):
            continue
        threads = 1
        for t in launch.threads:
            threads *= t
        for op in walk(launch.body):
            if isinstance(op, S.Gemm) and op.c.buffer.scope == FRAGMENT and whole_region(op.c):  # the SIMT copies move whole fragments
                try:
                    m, n, k = gemm_shape(op, target)
                except LoweringError:
                    continue  # a dynamic shape: the lowering reports it
                if simdgroup_fits(op, m, n, k, target, threads):
                    found.append((op, staged(op, m, n)))
    return found


def _fits(func: PrimFunc, target) -> bool:
    try:
        check_storage_budgets(func, storage_budgets(target.capabilities), target, narrowed=SHARED)
    except LoweringError:
        return False
    return True


def stage_function(func: PrimFunc, target) -> PrimFunc:
    for op, new in _candidates(func, target):
        tried = func.with_body(_Replace(op, new).mutate(func.body))
        if _fits(tried, target):
            func = tried
    return func


@module_pass("stage-simdgroup-gemms")
def stage_simdgroup_gemms(mod: IRModule, ctx) -> IRModule:
    """Fragment-C gemms the simdgroup_matrix path can take go through a threadgroup tile of C."""
    return mod.with_functions(stage_function(f, ctx.target) for f in mod.functions)
