"""The HIP target's complete pass order: the shared SIMT lowering at the target's wavefront width (64
on CDNA), lane exchanges through ds_bpermute, MFMA accumulators imposed on layout inference.

A work-group smaller than a wavefront (threads=32 on CDNA) is legal on AMD GPUs: it runs as one
partial wavefront, its upper lanes off. The shared SIMT passes want a block of at least one thread
group, so a function with such a kernel is lowered with thread groups of its smallest work-group
instead (`_group_width`): lane = tid % 32 is then the hardware lane, and ds_bpermute exchanges stay
within it. Such a function's gemms take the FMA path (MFMA needs whole wavefronts).
"""

from __future__ import annotations

import math
from functools import partial

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.hip.intrinsics.simt import hip_simt, wavefronts
from tilecraft.hip.ir import shared_accesses
from tilecraft.hip.op import OP_TABLE
from tilecraft.hip.op.gemm_plan import hip_strict_layouts
from tilecraft.hip.target import KIND
from tilecraft.hip.transform.lds_layouts import apply_lds_layouts
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.visitor import walk
from tilecraft.layout.inference import infer_layouts
from tilecraft.transform.allreduce import lower_thread_allreduce
from tilecraft.transform.buffer_views import lower_buffer_views
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.rasterize import rasterize_blocks
from tilecraft.transform.shared_scopes import narrow_shared_scopes
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.simt.barriers import insert_barriers
from tilecraft.transform.simt.lower_threads import lower_to_threads
from tilecraft.transform.split_kernels import split_kernels
from tilecraft.transform.storage import storage_pass
from tilecraft.transform.target_support import check_target_support
from tilecraft.transform.thread_dims import flatten_thread_dims
from tilecraft.transform.widen import widen_index_arithmetic


@module_pass("split-host-device")
def split_host_device(mod, ctx):
    """Each T.Kernel is a device kernel; the host function launches them in order."""
    return split_kernels(mod)


def _group_width(func: PrimFunc, target) -> int:
    """The target's wavefront, or the function's smallest work-group where that is below it."""
    width = target.attr("wavefront")
    for launch in (n for n in walk(func.body) if isinstance(n, S.KernelLaunch)):
        threads = math.prod(launch.threads)
        if 0 < threads < width and threads & (threads - 1) == 0:
            width = threads
    return width


def _per_function(mod: IRModule, ctx, make_pass) -> IRModule:
    out = []
    for f in mod.functions:
        out.extend(make_pass(_group_width(f, ctx.target))(mod.with_functions([f]), ctx).functions)
    return mod.with_functions(out)


@module_pass("infer-layouts")
def hip_infer_layouts(mod: IRModule, ctx) -> IRModule:
    """Every fragment has a layout (MFMA accumulators, propagation, defaults over wavefronts)."""
    return _per_function(
        mod,
        ctx,
        lambda width: infer_layouts(lambda t: wavefronts(width), partial(hip_strict_layouts, width=width)),
    )


@module_pass("lower-to-threads")
def hip_lower_to_threads(mod: IRModule, ctx) -> IRModule:
    """Tile ops and T.Parallel nests are per-work-item code; fragments are register arrays; reductions
    exchange lanes through ds_bpermute and wavefronts through LDS."""
    return _per_function(mod, ctx, lambda width: lower_to_threads(OP_TABLE, lambda t: wavefronts(width)))


plan_lds = storage_pass(
    "plan-lds",
    ("shared", "shared.dyn"),
    align=128,
    doc="Shared buffers have offsets in the work-group's dynamic LDS; launches carry its size.",
)

PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(),  # what the arch's capabilities lack: LDS, float64 math and T.print without ROCm
        flatten_thread_dims,  # threads=(X, Y, Z): one linear thread index, dim 0 fastest
        lower_thread_allreduce(hip_simt),  # T.tvm_thread_allreduce -> lane exchanges, then shared memory and a barrier
        rasterize_blocks,  # T.use_swizzle: work-groups renumbered in L2-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=True
        ),  # permuted global buffers addressed through their T.Layout; T.Fragment kept for inference
        hip_infer_layouts,  # fragment layouts: MFMA accumulators, propagation, defaults (wave64)
        hip_lower_to_threads,  # per-work-item code; reductions through ds_bpermute and LDS
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        apply_lds_layouts,  # MFMA operand tiles addressed at their swizzled LDS offsets
        simplify_pass,  # fold the per-thread index arithmetic
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        narrow_shared_scopes(),  # LDS buffers in scope from first to last use, so later ones reuse bytes
        insert_barriers(shared_accesses, hip_simt),  # barriers between LDS writes and other work-items' reads
        split_host_device,  # one kernel per T.Kernel, a host function that launches them
        plan_lds,  # LDS offsets with reuse; launch sizes
    ),
)
