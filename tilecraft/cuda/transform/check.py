"""What the CUDA target accepts, checked before lowering."""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import MbarRing, SetMaxNReg
from tilecraft.cuda.op.gemm_plan import DISABLE_TMA, DISABLE_WGMMA, tma_enabled, wgmma_enabled
from tilecraft.cuda.op.tma_store import TMA_STORE, tma_store_enabled
from tilecraft.cuda.storage import SHARED_ALIGN, SHARED_SCOPES
from tilecraft.cuda.target import capability
from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import walk
from tilecraft.transform.storage import STORAGE_ATTR
from tilecraft.transform.storage_budget import (
    StorageBudget,
    arena_budgets,
    check_storage_budgets,
    format_bytes,
    private_budget,
)

MIN_CAPABILITY = (8, 0)
# "Maximum amount of local memory per thread: 512 KB" for every compute capability (CUDA C++ Programming
# Guide, Technical Specifications). Fragments live in registers and spill there; past it a launch fails.
LOCAL_MEMORY_PER_THREAD = 512 * 1024


@module_pass("check-cuda-support")
def check_cuda_support(mod: IRModule, ctx) -> IRModule:
    """The target is sm_80 or newer, and the kernel uses only what this backend lowers."""
    arch = ctx.target.attr("arch")
    if arch is not None and capability(arch) < MIN_CAPABILITY:
        raise LoweringError(f"the CUDA backend needs sm_80 or newer (cp.async, bf16, ldmatrix); target arch is {arch}",
                            None, "use a target with -arch=sm_80 or newer", target=ctx.target)  # fmt: skip
    check_storage_budgets(mod, storage_budgets(ctx.target), ctx.target, narrowed=SHARED_SCOPES)
    for func in mod.functions:
        for launch in (n for n in walk(func.body) if isinstance(n, S.KernelLaunch)):
            _check_mbarriers(launch, arch, ctx.target)
    return mod


MBARRIER_CAPABILITY = (9, 0)  # mbarrier.try_wait.parity


def _check_mbarriers(launch: S.KernelLaunch, arch, target) -> None:
    """T.alloc_barrier's mbarriers need sm_90, and are made by the whole block at the kernel's top level
    (their initialization ends with a barrier of the block)."""
    inits = [n for n in walk(launch.body) if isinstance(n, S.BarrierInit)]
    if not inits:
        return
    if arch is not None and capability(arch) < MBARRIER_CAPABILITY:
        raise LoweringError(
            f"T.alloc_barrier needs sm_90 or newer (mbarrier.try_wait.parity); target arch is {arch}",
            inits[0].span, "use a target with -arch=sm_90a, or hand tiles between thread groups through "
            "shared memory and T.sync_threads()", target=target,
        )  # fmt: skip
    at_top = set()
    for stmt in _top_level(launch.body):
        if isinstance(stmt, S.BarrierInit):
            at_top.add(id(stmt))
    for init in inits:
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


SHARED_MEMORY = "resource:shared-memory"  # the limit of a kernel over the shared-memory budget (declared)


def storage_budgets(target) -> tuple[StorageBudget, ...]:
    """A thread's registers and local memory, and a block's shared memory where the target knows it."""
    private = private_budget(
        "registers and local memory",
        LOCAL_MEMORY_PER_THREAD,
        "use smaller tiles or more threads; a CUDA thread has at most 512 KiB of local memory, "
        "and anything past its 255 registers spills there",
    )
    shared = target.attr("max_shared_memory_per_block_optin")
    return (private, *arena_budgets("shared memory", SHARED_SCOPES, shared, SHARED_ALIGN, SHARED_MEMORY))


MBARRIER_BYTES = 8


@module_pass("check-planned-shared-memory")
def check_planned_shared_memory(mod: IRModule, ctx) -> IRModule:
    """Each kernel's planned shared memory (the plan's bytes and the mbarriers) within the target's limit.
    check-cuda-support counts live bytes before lowering, a pipelined tile once; the plan holds its
    num_stages copies, and warp specialization may keep a tile live longer than that count assumed (a
    T.Persistent kernel's staging tile next to its stage tiles). Such a kernel is refused here, with its
    line and the limit's key (SHARED_MEMORY, which the backend declares), instead of failing at load."""
    limit = ctx.target.attr("max_shared_memory_per_block_optin")
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
