"""How every T.gemm of a CUDA kernel runs, decided once and recorded in the IR (`select-gemm-instructions`).

Each gemm gets its `GemmPlan` (cuda/op/gemm_plan.py: the variant, wgmma / wgmma_rs / ss / rs / fma, the
grid of warps or warpgroups, the layouts it imposes on the accumulator and on a register A) as its
annotation `gemm_plan`, and each function the attribute `tilecraft.cuda.wgmma`: whether it takes the
sm_90a path (wgmma gemms, TMA loads and stores). The passes after it read the record and plan nothing
again: strict layouts in `infer-layouts`, gemm lowering and the TMA choice in `lower-to-threads`, the
staging split in `split-staging-tiles`. A gemm without its plan there is an internal compiler error that
names this pass.

A function takes the sm_90a path where the target has wgmma, the pipeline allows it (the CuTe DSL
variant's does not), `tl.disable_wgmma` is not set, and none of these holds:

* some tile-level code of a kernel runs on part of its threads (a branch on the thread index, or a thread
  count that is not a power of two): warpgroup-wide instructions, one elected TMA issuer and mbarrier
  arrival counts of the whole block are kept for kernels whose tiles are the whole block's;
* a gemm taking A from registers does not fit wgmma ("wgmma_rs"): left on mma.sync it would need its
  operand in the mma layout, which a wgmma accumulator feeding it (flash attention's P tile) contradicts;
* a shared tile read by several gemms would need two layouts: one gemm reads it through wgmma (the
  canonical layout), another through ldmatrix (a gemm wgmma cannot take, such as M = 32); mma.sync's
  operand layout depends only on the tile's row length (TileLang's mha_sink_bwd reads K_shared both ways).

Off that path every gemm is planned for mma.sync (or the FMA loop).
"""

from __future__ import annotations

import dataclasses
import math

from tilecraft import settings
from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.intrinsics.simt import cuda_simt
from tilecraft.cuda.op.gemm_plan import (
    GEMM_PLAN,
    WGMMA_PATH,
    GemmPlan,
    plan_gemm,
    register_a_on_wgmma,
    wgmma_enabled,
)
from tilecraft.cuda.storage import SHARED_SCOPES
from tilecraft.cuda.transform.strict_layouts import gemm_layouts
from tilecraft.ir import stmt as S
from tilecraft.ir.function import PrimFunc
from tilecraft.ir.visitor import Mutator, walk
from tilecraft.transform.thread_groups import groups_of


def select_gemm_instructions(wgmma: bool = True):
    """The `select-gemm-instructions` pass; `wgmma=False` (a pipeline that emits no wgmma) plans every
    gemm for mma.sync or the FMA loop."""

    @module_pass("select-gemm-instructions")
    def run(mod, ctx):
        """Every T.gemm carries its GemmPlan (annotation "gemm_plan") and every function whether it takes
        the sm_90a wgmma / TMA path (attribute "tilecraft.cuda.wgmma")."""
        allowed = wgmma and wgmma_enabled(ctx.target, ctx.pass_configs)
        return mod.with_functions(_select(f, ctx.target, allowed) for f in mod.functions)

    return run


def _select(func: PrimFunc, target, allowed: bool) -> PrimFunc:
    launches = [n for n in walk(func.body) if isinstance(n, S.KernelLaunch)]
    plans = _wgmma_plans(launches, target) if allowed else None
    on = plans is not None
    if not on:
        plans = {}
        for launch in launches:
            width = cuda_simt(target).width
            for stmt, group in groups_of(launch, width, target):
                if isinstance(stmt, S.Gemm):
                    plans[id(stmt)] = plan_gemm(stmt, group.span, target)
    return func.with_body(_Record(plans).mutate(func.body)).with_attr(WGMMA_PATH, on)


def _wgmma_plans(launches: list[S.KernelLaunch], target) -> dict[int, GemmPlan] | None:
    """Every gemm's plan on the sm_90a path, or None where the function keeps mma.sync (see the module)."""
    split = [launch for launch in launches if _split_into_groups(launch, target)]
    for launch in split:
        settings.verbose_note(launch.span, "the kernel's tiles run on part of its threads (a branch on "
                              "the thread index, or threads that are not a power of two): T.gemm uses "
                              "mma.sync and copies cp.async, not wgmma and TMA")  # fmt: skip
    if split:
        return None
    plans: dict[int, GemmPlan] = {}
    for launch in launches:
        threads = math.prod(launch.threads)
        gemms = [op for op in walk(launch.body) if isinstance(op, S.Gemm)]
        for op in gemms:
            if op.a.buffer.scope == "local.fragment" and not register_a_on_wgmma(op, threads, target):
                return None
        for op in gemms:
            plans[id(op)] = plan_gemm(op, threads, target, wgmma=True)
        if not _shared_operands_agree(gemms, plans):
            return None
    return plans


def _split_into_groups(launch: S.KernelLaunch, target) -> bool:
    """Whether some tile-level code of the launch runs on only part of its threads."""
    for _, group in groups_of(launch, cuda_simt(target).width, target):
        if not group.whole or group.count != math.prod(launch.threads):
            return True
    return False


def _shared_operands_agree(gemms: list[S.Gemm], plans: dict[int, GemmPlan]) -> bool:
    """Every shared tile that several gemms read gets one layout from all of them."""
    demanded: dict[int, object] = {}
    for op in gemms:
        for buf, layout, _ in gemm_layouts(op, plans[id(op)]):
            if buf.scope in SHARED_SCOPES and demanded.setdefault(id(buf), layout) != layout:
                return False
    return True


class _Record(Mutator):
    """Puts each gemm's plan in its annotations."""

    def __init__(self, plans: dict[int, GemmPlan]) -> None:
        super().__init__()
        self.plans = plans

    def mutate_Buffer(self, buf):
        return buf

    def mutate_Gemm(self, op: S.Gemm) -> S.Stmt:
        kept = tuple((k, v) for k, v in op.annotations if k != GEMM_PLAN)
        return dataclasses.replace(op, annotations=(*kept, (GEMM_PLAN, self.plans[id(op)])))
