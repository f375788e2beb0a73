"""The WebGPU target's complete pass order: the shared SIMT lowering, with workgroup barriers.

Unlike OpenCL there is no `widen-index-arithmetic`: WGSL indexes arrays with 32-bit integers, and a
storage buffer binding holds at most `max_binding_size` bytes (lavapipe: 128 MiB; WebGPU caps it below
4 GiB), so no element index of a bound buffer needs 64 bits. Nor is there a storage pass: WebGPU has
no dynamic workgroup memory, so codegen declares each kernel's workgroup arrays itself.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.layout.inference import infer_layouts
from tilecraft.transform.allreduce import lower_thread_allreduce
from tilecraft.transform.buffer_views import lower_buffer_views
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.iteration_local import mark_iteration_local_shared
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.rasterize import rasterize_blocks
from tilecraft.transform.shared_scopes import narrow_shared_scopes
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.simt.barriers import insert_barriers
from tilecraft.transform.simt.lower_threads import lower_to_threads
from tilecraft.transform.split_kernels import split_kernels
from tilecraft.transform.target_support import check_target_support
from tilecraft.transform.thread_dims import flatten_thread_dims
from tilecraft.webgpu.op import OP_TABLE
from tilecraft.webgpu.simt import webgpu_simt
from tilecraft.webgpu.target import KIND
from tilecraft.webgpu.transform.loop_iterations import check_loop_iterations


@module_pass("split-host-device")
def split_host_device(mod, ctx):
    """Each T.Kernel is a compute entry point; the host function dispatches them in order."""
    return split_kernels(mod)


PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(iteration_local=True, bindings=True),  # what the adapter's capabilities lack
        flatten_thread_dims,  # threads=(X, Y, Z): one linear thread index, dim 0 fastest
        lower_thread_allreduce(webgpu_simt),  # T.tvm_thread_allreduce -> lane exchanges, then shared memory and a barrier
        rasterize_blocks,  # T.use_swizzle: workgroups renumbered in cache-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(keep_fragments=True),  # permuted global buffers addressed through their T.Layout
        infer_layouts(webgpu_simt),  # fragment layouts by propagation and defaults (no instruction's)
        mark_iteration_local_shared,  # loops whose shared tiles are written whole before each use (no async copies)
        lower_to_threads(OP_TABLE, webgpu_simt),  # per-invocation code; subgroup or workgroup-memory reductions
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        simplify_pass,  # fold the per-thread index arithmetic
        narrow_shared_scopes(bindings=True),  # workgroup buffers in scope from first to last use, so later ones reuse words
        insert_barriers(None, webgpu_simt),  # workgroupBarrier between workgroup writes and others' reads
        split_host_device,  # one @compute entry point per T.Kernel, a host function that dispatches them
        check_loop_iterations,  # loop passes per invocation within the driver's limit (llvmpipe: 65535)
    ),
)
