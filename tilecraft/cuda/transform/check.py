"""What the CUDA backend checks beyond the target's capabilities (check-target-support): where a kernel
makes its mbarriers, before lowering, and its planned shared memory, after planning."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import MbarRing, SetMaxNReg
from tilecraft.cuda.op.gemm_plan import DISABLE_TMA, DISABLE_WGMMA, tma_enabled, wgmma_enabled
from tilecraft.cuda.op.tma_store import TMA_STORE, tma_store_enabled
from tilecraft.cuda.target import SHARED_MEMORY
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import walk
from tilecraft.transform.storage import STORAGE_ATTR
from tilecraft.transform.storage_budget import format_bytes


@module_pass("check-barrier-placement")
def check_barrier_placement(mod: IRModule, ctx) -> IRModule:
    """T.alloc_barrier's mbarriers are made by the whole block at the kernel's top level (their
    initialization ends with a barrier of the block); whether the arch has them at all is the target's
    capabilities' (check-target-support)."""
    for func in mod.functions:
        for launch in (n for n in walk(func.body) if isinstance(n, S.KernelLaunch)):
            _check_top_level(launch, ctx.target)
    return mod


def _check_top_level(launch: S.KernelLaunch, target) -> None:
    at_top = {id(stmt) for stmt in _top_level(launch.body) if isinstance(stmt, S.BarrierInit)}
    for init in (n for n in walk(launch.body) if isinstance(n, S.BarrierInit)):
        if id(init) not in at_top:
            raise LoweringError(
                f"T.alloc_barrier of {init.barriers.name} stands under a branch or loop; its barriers are "
                "initialized by the whole block, at the kernel's top level",
                init.span, "allocate the barriers at the top of the T.Kernel body", target=target,
            )  # fmt: skip


def _top_level(body: S.Stmt):
    """The kernel body's statements outside branches and loops (through lets, allocations, sequences)."""
    stack = [body]
    while stack:
        s = stack.pop()
        yield s
        if isinstance(s, S.SeqStmt):
            stack.extend(s.stmts)
        elif isinstance(s, (S.LetStmt, S.Allocate)):
            stack.append(s.body)


MBARRIER_BYTES = 8


@module_pass("check-planned-shared-memory")
def check_planned_shared_memory(mod: IRModule, ctx) -> IRModule:
    """Each kernel's planned shared memory (the plan's bytes and the mbarriers) within the target's limit.
    check-target-support counts live bytes before lowering, a pipelined tile once; the plan holds its
    num_stages copies, and warp specialization may keep a tile live longer than that count assumed (a
    T.Persistent kernel's staging tile next to its stage tiles). Such a kernel is refused here, with its
    line and the limit's key (SHARED_MEMORY, which the backend declares), instead of failing at load."""
    limit = ctx.target.capabilities.shared_memory.bytes
    if not limit:
        return mod
    for func in mod.functions:
        if not isinstance(func.body, S.KernelLaunch):
            continue
        barriers = sum(n.stages for n in walk(func.body) if isinstance(n, MbarRing)) * MBARRIER_BYTES
        need = func.attr(STORAGE_ATTR, 0) + barriers
        if need > limit:
            specialized = any(isinstance(n, SetMaxNReg) for n in walk(func.body))
            why = ("once warp-specialized (its producer keeps the stage tiles live while the consumers' epilogue "
                   "tile is in use)" if specialized else "as planned, with every pipelined tile in its "
                   f"num_stages copies and {barriers // MBARRIER_BYTES} mbarriers")  # fmt: skip
            raise LoweringError(
                f"the kernel needs {format_bytes(need)} of shared memory {why}, more than the target's "
                f"{format_bytes(limit)} per block",
                func.body.span,
                "use fewer pipeline stages or smaller tiles, or store the epilogue from the fragment (no "
                f"shared staging tile){_split_switched_off(ctx)}",
                target=ctx.target,
                unsupported=SHARED_MEMORY,
            )
    return mod


def _split_switched_off(ctx) -> str:
    """The hint's tail where pass configs switch off the TMA-store epilogue on sm_90a, whose
    split-staging-tiles would store a staging tile that does not fit beside the stages in column blocks."""
    configs = ctx.pass_configs
    if not wgmma_enabled(ctx.target, {}):
        return ""
    off = [key for key, on in ((DISABLE_WGMMA, wgmma_enabled(ctx.target, configs)),
                               (DISABLE_TMA, tma_enabled(configs)),
                               (TMA_STORE, tma_store_enabled(configs))) if not on]  # fmt: skip
    if not off:
        return ""
    return (
        "; on sm_90a the TMA-store epilogue stores such a staging tile in column blocks through narrower "
        f"tiles, and the pass config{'s' if len(off) > 1 else ''} {', '.join(map(repr, off))} switch"
        f"{'' if len(off) > 1 else 'es'} it off"
    )
