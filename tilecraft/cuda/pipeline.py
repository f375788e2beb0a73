"""The CUDA target's complete pass order."""

from __future__ import annotations

from functools import partial

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.cuda.intrinsics.simt import cuda_simt
from tilecraft.cuda.ir import shared_accesses
from tilecraft.cuda.op import OP_TABLE
from tilecraft.cuda.op.copy import lower_copy
from tilecraft.cuda.op.gemm_plan import WGMMA_PATH, on_wgmma_path, tma_enabled
from tilecraft.cuda.op.tma_store import staging_layouts, tma_store_enabled, unsuited_copies
from tilecraft.cuda.storage import mark_assumed_alignment, plan_shared_memory
from tilecraft.cuda.target import KIND, capability
from tilecraft.cuda.transform.async_gathers import async_gathers
from tilecraft.cuda.transform.check import check_barrier_placement, check_planned_shared_memory
from tilecraft.cuda.transform.clusters import cluster_launches
from tilecraft.cuda.transform.gemm_instructions import select_gemm_instructions
from tilecraft.cuda.transform.late_waits import sink_tma_waits
from tilecraft.cuda.transform.shared_layouts import apply_shared_layouts
from tilecraft.cuda.transform.software_pipeline import inject_software_pipeline
from tilecraft.cuda.transform.split_staging import split_staging_tiles
from tilecraft.cuda.transform.strict_layouts import (
    cuda_strict_layouts,
    fma_operand_layouts,
    fragment_source_layouts,
)
from tilecraft.cuda.transform.tma_store_waits import place_tma_store_waits
from tilecraft.cuda.transform.vectorize_loops import vectorize_loops
from tilecraft.cuda.transform.warp_specialize import room_for_producer, tile_array_registers, warp_specialize
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import rewrite_launches
from tilecraft.layout.inference import infer_layouts
from tilecraft.transform.allreduce import lower_thread_allreduce
from tilecraft.transform.bounds_checks import mark_bounds_checks
from tilecraft.transform.buffer_views import lower_buffer_views
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.loop_start import normalize_pipelined_loops
from tilecraft.transform.rasterize import rasterize_blocks
from tilecraft.transform.shared_scopes import narrow_shared_scopes
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.simt.barriers import insert_barriers
from tilecraft.transform.simt.lower_threads import lower_to_threads
from tilecraft.transform.split_kernels import split_host_device_pass
from tilecraft.transform.target_support import check_target_support
from tilecraft.transform.thread_dims import flatten_thread_dims
from tilecraft.transform.widen import widen_index_arithmetic

STMATRIX_CAPABILITY = (9, 0)


def _tma_stores(wgmma: bool, ctx) -> bool:
    """TMA stores where TMA loads are (sm_90a, wgmma allowed, no tl.disable_tma_lower), unless the pass
    config tilecraft.cuda.tma_store is False."""
    return wgmma and tma_enabled(ctx.pass_configs) and tma_store_enabled(ctx.pass_configs)


def _strict_layouts(func: PrimFunc, wgmma: bool, ctx):
    """The gemms' layouts (tensor-core operands and accumulators, the tiles FMA gemms read along their
    rows, as each gemm's recorded plan says), swizzles of the tiles copied into fragments, and where TMA
    stores are on the staging layout of each tile they store."""
    fma = fma_operand_layouts(func.body)
    sources = fragment_source_layouts(func.body)
    staging = staging_layouts(func.body) if _tma_stores(wgmma, ctx) else None

    def strict(op, threads, target):
        yield from cuda_strict_layouts(op, threads, target)
        yield from fma(op, threads, target)
        yield from sources(op, threads, target)
        if staging is not None:
            yield from staging(op, threads, target)

    return strict


@module_pass("split-staging-tiles")
def cuda_split_staging_tiles(mod: IRModule, ctx) -> IRModule:
    """Where the TMA-store epilogue is on, a staging tile that would take the kernel's shared memory past
    the target's limit beside the pipeline's stages is stored in column blocks (transform/split_staging.py)."""
    limit = ctx.target.capabilities.shared_memory.bytes
    out = []
    for f in mod.functions:
        if limit and _tma_stores(on_wgmma_path(f), ctx):
            f = f.with_body(rewrite_launches(f.body, lambda launch: split_staging_tiles(launch, limit)))
        out.append(f)
    return mod.with_functions(out)


@module_pass("infer-layouts")
def cuda_infer_layouts(mod: IRModule, ctx) -> IRModule:
    """Every fragment has a layout (mma/wgmma accumulators, propagation, defaults); swizzled gemm tiles
    and, on sm_90a, swizzled staging tiles of TMA stores."""
    out = []
    for f in mod.functions:
        strict = _strict_layouts(f, on_wgmma_path(f), ctx)
        out.extend(infer_layouts(cuda_simt, strict)(mod.with_functions([f]), ctx).functions)
    return mod.with_functions(out)


@module_pass("lower-to-threads")
def cuda_lower_to_threads(mod: IRModule, ctx) -> IRModule:
    """Tile ops and T.Parallel nests are per-thread code; fragments are per-thread register arrays;
    on sm_90a, copies into wgmma operand tiles are TMA loads and copies of shared tiles to global
    memory TMA stores unless tl.disable_tma_lower is set, and 16-bit accumulators go to shared tiles
    through stmatrix (sm_90 and newer) unless tilecraft.cuda.tma_store is False."""
    tma = tma_enabled(ctx.pass_configs)
    arch = ctx.target.attr("arch")
    stmatrix = (
        arch is not None and capability(arch) >= STMATRIX_CAPABILITY and tma_store_enabled(ctx.pass_configs)
    )
    out = []
    for f in mod.functions:
        wgmma = on_wgmma_path(f)
        # TMA loads fill wgmma operand tiles, so they exist where wgmma does
        slices = room_for_producer(tile_array_registers(f.body))
        copy = partial(lower_copy, tma=wgmma and tma, tma_store=_tma_stores(wgmma, ctx), stmatrix=stmatrix,
                       unsuited=unsuited_copies(f.body), tma_slices=slices)  # fmt: skip
        table = {**OP_TABLE, S.Copy: copy}
        lowered = lower_to_threads(table, cuda_simt)(mod.with_functions([f]), ctx).functions
        # the decision is in the instructions now (wgmma calls, TMA copies); no later pass reads it
        out.extend(g.without_attr(WGMMA_PATH) for g in lowered)
    return mod.with_functions(out)


PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(),  # what the arch's capabilities lack (sm_80+, mbarriers, shared memory): refused
        flatten_thread_dims,  # threads=(X, Y, Z): one linear thread index, dim 0 fastest
        lower_thread_allreduce(cuda_simt),  # T.tvm_thread_allreduce -> lane exchanges, then shared memory and a barrier
        check_barrier_placement,  # T.alloc_barrier at the kernel's top level
        cluster_launches,  # T.Kernel(cluster_dims=...): kept on sm_90+, dropped (a scheduling matter) before
        rasterize_blocks,  # T.use_swizzle: blocks renumbered in L2-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=True
        ),  # permuted global buffers addressed through their T.Layout; T.Fragment kept for inference
        select_gemm_instructions(),  # each gemm's plan (wgmma, mma.sync, FMA) and the function's sm_90a path, recorded
        cuda_split_staging_tiles,  # a staging tile past the shared-memory limit beside the stages: column blocks
        cuda_infer_layouts,  # fragment layouts (mma/wgmma accumulators, propagation, defaults); gemm tiles
        cuda_lower_to_threads,  # tile ops and T.Parallel nests -> per-thread code; fragments -> registers
        normalize_pipelined_loops,  # T.Pipelined(start, end) -> a loop from 0 reading k + start
        async_gathers,  # element gathers into shared tiles in T.Pipelined loops -> zero-filling cp.async
        inject_software_pipeline,  # T.Pipelined with cp.async / TMA (mbarrier ring) -> multi-stage buffers
        sink_tma_waits,  # a TMA load outside a pipeline is waited for at its tile's first use
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        vectorize_loops,  # T.vectorized copies of one contiguous aligned run -> one vector access
        apply_shared_layouts,  # swizzled shared tiles addressed by physical offsets
        simplify_pass,  # fold the per-thread index arithmetic
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        place_tma_store_waits,  # the TMA store's issuer waits for its reads before the tile is rewritten / exit
        narrow_shared_scopes(),  # shared buffers in scope from first to last use, so later ones reuse bytes
        insert_barriers(shared_accesses, cuda_simt),  # barriers: shared writes / reads (bar.sync in groups)
        warp_specialize,  # a producer warpgroup issues the TMA loads of specialized pipelines (sm_90a)
        split_host_device_pass,  # one device kernel per T.Kernel, a host function that launches them
        plan_shared_memory,  # dynamic shared memory offsets with reuse, carried to codegen; launch sizes
        check_planned_shared_memory,  # the plan within the target's shared memory (warp specialization)
        mark_assumed_alignment,  # pass config tilecraft.cuda.assume_aligned, carried to codegen
        mark_bounds_checks,  # opt-in debug checks on every buffer access (TILECRAFT_BOUNDS_CHECK)
    ),
)
