"""The CuTe DSL variant's complete pass order.

Started by `tilecraft backend new cutedsl --from cuda` as a copy of tilecraft/cuda/pipeline.py, and kept
to the cuda pipeline's passes (the same tile semantics, layouts and software pipelining) with three
differences: the first pass refuses what the CuTe DSL codegen does not emit (with the kernel's line and
what to use instead), and every gemm takes the mma.sync path (warp MMA atoms fed by ldmatrix copy atoms
and cp.async copy atoms) on every arch, so no wgmma, TMA, stmatrix or warp-specialized producer node
reaches codegen. The tail (host/device split, shared-memory plan) is the cuda pipeline's.
"""

from __future__ import annotations

from functools import partial

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.cuda.intrinsics.simt import cuda_simt
from tilecraft.cuda.ir import shared_accesses
from tilecraft.cuda.op.copy import lower_copy
from tilecraft.cuda.op.gemm_plan import WGMMA_PATH
from tilecraft.cuda.storage import mark_assumed_alignment, plan_shared_memory
from tilecraft.cuda.target import KIND
from tilecraft.cuda.transform.async_gathers import async_gathers
from tilecraft.cuda.transform.check import check_barrier_placement, check_planned_shared_memory
from tilecraft.cuda.transform.gemm_instructions import select_gemm_instructions
from tilecraft.cuda.transform.shared_layouts import apply_shared_layouts
from tilecraft.cuda.transform.software_pipeline import inject_software_pipeline
from tilecraft.cuda.transform.strict_layouts import cuda_strict_layouts
from tilecraft.cutedsl.check import check_cutedsl_support
from tilecraft.cutedsl.op import OP_TABLE
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.layout.inference import infer_layouts
from tilecraft.transform.buffer_views import lower_buffer_views
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.rasterize import rasterize_blocks
from tilecraft.transform.shared_scopes import narrow_shared_scopes
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.simt.barriers import insert_barriers
from tilecraft.transform.simt.lower_threads import lower_to_threads
from tilecraft.transform.split_kernels import split_host_device_pass
from tilecraft.transform.target_support import check_target_support
from tilecraft.transform.widen import widen_index_arithmetic


@module_pass("infer-layouts")
def cutedsl_infer_layouts(mod: IRModule, ctx) -> IRModule:
    """Every fragment has a layout: mma.sync accumulators (the m16n8k16 atom's), propagation, defaults;
    swizzled gemm operand tiles (what ldmatrix reads without bank conflicts)."""
    return infer_layouts(cuda_simt, cuda_strict_layouts)(mod, ctx)


@module_pass("lower-to-threads")
def cutedsl_lower_to_threads(mod: IRModule, ctx) -> IRModule:
    """Tile ops and T.Parallel nests are per-thread code; fragments are per-thread register arrays; a
    gemm is one GemmCall of mma.sync atoms; copies into shared tiles are cp.async (never TMA)."""
    copy = partial(lower_copy, tma=False, tma_store=False, stmatrix=False, unsuited=frozenset())
    table = {**OP_TABLE, S.Copy: copy}
    lowered = lower_to_threads(table, cuda_simt)(mod, ctx)
    return lowered.with_functions(f.without_attr(WGMMA_PATH) for f in lowered.functions)


PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(),  # what the arch's capabilities lack (sm_80+, mbarriers, shared memory): refused
        check_barrier_placement,  # T.alloc_barrier at the kernel's top level
        check_cutedsl_support,  # what the CuTe DSL codegen emits: the rest refused with the kernel's line
        rasterize_blocks,  # T.use_swizzle: blocks renumbered in L2-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=True
        ),  # permuted global buffers addressed through their T.Layout; T.Fragment kept for inference
        select_gemm_instructions(wgmma=False),  # each gemm's plan (mma.sync or FMA), recorded on it
        cutedsl_infer_layouts,  # fragment layouts (mma.sync accumulators, propagation, defaults); gemm tiles
        cutedsl_lower_to_threads,  # tile ops and T.Parallel nests -> per-thread code; fragments -> registers
        async_gathers,  # element gathers into shared tiles in T.Pipelined loops -> zero-filling cp.async
        inject_software_pipeline,  # T.Pipelined with cp.async -> multi-stage buffers
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        apply_shared_layouts,  # swizzled shared tiles addressed by physical offsets
        simplify_pass,  # fold the per-thread index arithmetic
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        narrow_shared_scopes(),  # shared buffers in scope from first to last use, so later ones reuse bytes
        insert_barriers(shared_accesses, cuda_simt),  # barriers: shared writes / reads
        split_host_device_pass,  # one device kernel per T.Kernel, a host function that launches them
        plan_shared_memory,  # dynamic shared memory offsets with reuse, carried to codegen; launch sizes
        check_planned_shared_memory,  # the plan within the target's shared memory
        mark_assumed_alignment,  # pass config tilecraft.cuda.assume_aligned, carried to codegen
    ),
)
