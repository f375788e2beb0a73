"""The OpenCL target's complete pass order: the shared SIMT lowering, with barriers for work-groups."""

from __future__ import annotations

from tilecraft.backend.pipeline import PassPipeline
from tilecraft.layout.inference import infer_layouts
from tilecraft.opencl.op import OP_TABLE
from tilecraft.opencl.simt import opencl_simt
from tilecraft.opencl.storage import plan_local_memory
from tilecraft.opencl.target import KIND
from tilecraft.transform.allreduce import lower_thread_allreduce
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
from tilecraft.transform.thread_dims import flatten_thread_dims
from tilecraft.transform.widen import widen_index_arithmetic

PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(),  # what the device's capabilities lack: float64, 64-bit atomics, work-items, memory
        flatten_thread_dims,  # threads=(X, Y, Z): one linear thread index, dim 0 fastest
        lower_thread_allreduce(opencl_simt),  # T.tvm_thread_allreduce -> lane exchanges, then shared memory and a barrier
        rasterize_blocks,  # T.use_swizzle: work-groups renumbered in cache-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=True
        ),  # permuted global buffers addressed through their T.Layout; T.Fragment kept for inference
        infer_layouts(opencl_simt),  # fragment layouts by propagation and defaults (no instruction's)
        lower_to_threads(OP_TABLE, opencl_simt),  # per-work-item code; reductions through local memory
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        simplify_pass,  # fold the per-thread index arithmetic
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        narrow_shared_scopes(),  # local buffers in scope from first to last use, so later ones reuse bytes
        insert_barriers(None, opencl_simt),  # barrier() between local writes and other work-items' reads
        split_host_device_pass,  # one __kernel per T.Kernel, a host function that launches them
        plan_local_memory,  # local memory offsets with reuse, carried to codegen; launch sizes
    ),
)
