"""The Metal target's complete pass order: the shared SIMT lowering with SIMD-group shuffles and
reductions, simdgroup_matrix gemms, and threadgroup barriers."""

from __future__ import annotations

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.layout.inference import infer_layouts
from tilecraft.metal.op import OP_TABLE
from tilecraft.metal.op.gemm import shared_accesses
from tilecraft.metal.simt import metal_simt
from tilecraft.metal.target import KIND
from tilecraft.metal.transform.stage_gemm import stage_simdgroup_gemms
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


plan_threadgroup_memory = storage_pass(
    "plan-threadgroup-memory",
    ("shared", "shared.dyn"),
    align=16,
    doc="Shared buffers have offsets in the threadgroup's memory; launches carry its size.",
)

PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(),  # what the family's capabilities lack: float64, 64-bit atomics, T.print, limits
        flatten_thread_dims,  # threads=(X, Y, Z): one linear thread index, dim 0 fastest
        lower_thread_allreduce(metal_simt),  # T.tvm_thread_allreduce -> lane exchanges, then shared memory and a barrier
        rasterize_blocks,  # T.use_swizzle: threadgroups renumbered in cache-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=True
        ),  # permuted global buffers addressed through their T.Layout
        stage_simdgroup_gemms,  # fragment-C gemms through a threadgroup tile for simdgroup_matrix, where it fits
        infer_layouts(metal_simt),  # fragment layouts by propagation and defaults
        lower_to_threads(OP_TABLE, metal_simt),  # per-thread code; simd_shuffle_xor / simd_sum reductions
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        simplify_pass,  # fold the per-thread index arithmetic
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        narrow_shared_scopes(),  # threadgroup buffers in scope from first to last use, so later ones reuse bytes
        insert_barriers(
            shared_accesses, metal_simt
        ),  # threadgroup_barrier between threadgroup writes and other threads' reads (none within a thread group)
        split_host_device,  # one kernel function per T.Kernel, a host function that launches them
        plan_threadgroup_memory,  # threadgroup memory offsets with reuse; launch sizes
    ),
)
