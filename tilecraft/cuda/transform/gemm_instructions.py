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
* a gemm taking A from registers does not fit wgmma ("wgmma_rs") while another gemm of the kernel takes
  wgmma: left on mma.sync it would need its operand in the mma layout, which a wgmma accumulator feeding
  it (flash attention's P tile) contradicts (a kernel whose gemms are all mma.sync, such as TileLang's
  w4a8 int8 gemm, keeps the path for its TMA loads);
* a shared tile read by several gemms would need two layouts. An mma.sync gemm (one wgmma cannot take,
  such as M = 32) that reads a whole 16-bit tile a wgmma gemm reads takes it in wgmma's canonical
  layout (TileLang's GQA backward reads K_shared both ways); other disagreements remain.

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
    WGMMA_VARIANTS,
    GemmPlan,
    plan_gemm,
    register_a_on_wgmma,
    wgmma_enabled,
)
from tilecraft.cuda.shared_layout import SharedLayout
from tilecraft.cuda.storage import SHARED_SCOPES
from tilecraft.cuda.transform.strict_layouts import gemm_layouts
from tilecraft.ir import stmt as S
from tilecraft.ir.function import PrimFunc
from tilecraft.ir.visitor import BufferKeepingMutator, walk
from tilecraft.transform.thread_groups import groups_of
from tilecraft.transform.tile_loops import whole_region


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
            plans[id(op)] = plan_gemm(op, threads, target, wgmma=True)
        on_wgmma = any(plans[id(op)].variant in WGMMA_VARIANTS for op in gemms)
        for op in gemms:
            if on_wgmma and op.a.buffer.scope == "local.fragment" and not register_a_on_wgmma(op, threads, target):
                return None
        _read_wgmma_tiles_on_mma(gemms, plans)
        if not _shared_operands_agree(gemms, plans):
            return None
    return plans


def _read_wgmma_tiles_on_mma(gemms: list[S.Gemm], plans: dict[int, GemmPlan]) -> None:
    """An mma.sync gemm ("ss", 16-bit) that reads a whole shared tile a wgmma gemm also reads takes the
    tile in wgmma's canonical layout (its plan's atom for that operand; tc::gemm_ss then addresses the
    ldmatrix rows in that layout), so the tile keeps one layout: TileLang's GQA backward reads K_shared
    through wgmma (K @ Q^T) and through mma.sync (dQ = dS^T @ K, 32 rows, too few for wgmma)."""
    canonical = {}
    for op in gemms:
        if plans[id(op)].variant in WGMMA_VARIANTS:
            for buf, layout, _ in gemm_layouts(op, plans[id(op)]):
                if isinstance(layout, SharedLayout) and layout.kind == "wgmma" and layout.element_bytes == 2:
                    canonical.setdefault(id(buf), layout.atom)
    for op in gemms:
        plan = plans[id(op)]
        if plan.variant != "ss" or op.a.dtype.bits != 16 or op.b.dtype.bits != 16:
            continue
        atoms = [canonical.get(id(r.buffer), 0) if whole_region(r) else 0 for r in (op.a, op.b)]
        if any(atoms):
            plans[id(op)] = dataclasses.replace(plan, atom_a=atoms[0], atom_b=atoms[1])


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


class _Record(BufferKeepingMutator):
    """Puts each gemm's plan in its annotations."""

    def __init__(self, plans: dict[int, GemmPlan]) -> None:
        super().__init__()
        self.plans = plans

    def mutate_Gemm(self, op: S.Gemm) -> S.Stmt:
        kept = tuple((k, v) for k, v in op.annotations if k != GEMM_PLAN)
        return dataclasses.replace(op, annotations=(*kept, (GEMM_PLAN, self.plans[id(op)])))
