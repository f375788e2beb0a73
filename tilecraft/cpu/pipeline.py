"""The CPU target's complete pass order."""

from __future__ import annotations

from tilecraft.backend.pipeline import PassPipeline
from tilecraft.cpu.op import OP_TABLE
from tilecraft.cpu.storage import plan_block_storage
from tilecraft.cpu.target import KIND
from tilecraft.cpu.transform.block_model import apply_block_model, check_block_model, run_thread_groups
from tilecraft.cpu.transform.gemm_operands import gemm_a_in_place, gemm_b_panels, gemm_live_rows
from tilecraft.cpu.transform.mbarriers import emulate_mbarriers
from tilecraft.cpu.transform.work_items import run_work_items
from tilecraft.transform.allreduce import lower_thread_allreduce
from tilecraft.transform.bounds_checks import BOUNDS_CHECK, mark_bounds_checks  # noqa: F401 - BOUNDS_CHECK re-exported
from tilecraft.transform.buffer_views import lower_buffer_views
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.lower_tile_ops import lower_tile_ops
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.split_kernels import split_host_device_pass
from tilecraft.transform.target_support import check_target_support
from tilecraft.transform.thread_dims import flatten_thread_dims
from tilecraft.transform.widen import widen_index_arithmetic

PIPELINE = PassPipeline(
    KIND,
    (
        check_target_support(),  # what the target's capabilities lack (a host processor lacks nothing)
        flatten_thread_dims,  # threads=(X, Y, Z): one linear thread index, dim 0 fastest
        lower_thread_allreduce(),  # T.tvm_thread_allreduce -> shared memory and a barrier
        run_work_items,  # per-thread code: loops over the block's threads between barriers
        emulate_mbarriers,  # T.alloc_barrier's mbarriers: counters that program order must satisfy
        run_thread_groups,  # `if thread index < c: A else: B` (thread groups): A then B
        check_block_model,  # a check: no thread index is left (the passes above remove every read)
        apply_block_model,  # drop rasterization hints, serialize T.Pipelined, barriers are no-ops
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=False
        ),  # permuted global buffers addressed through their T.Layout; other layouts are hints here
        gemm_a_in_place,  # a gemm reads an A tile inside its tensor where it lies; its copy runs at the edge only
        gemm_b_panels,  # a B tile only copies write and gemms read is stored as the kernel's column panels
        gemm_live_rows,  # a gemm skips accumulator rows past the tensor's edge that are never stored
        lower_tile_ops(OP_TABLE),  # copy/fill/gemm/reduce/cumsum/atomics -> loops and kernel calls
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        simplify_pass,  # fold the index arithmetic the lowering produced
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        split_host_device_pass,  # one device function per T.Kernel, a host function that launches them
        plan_block_storage,  # per-block scratch offsets, with reuse; launches carry the size
        mark_bounds_checks,  # opt-in debug checks on every buffer access
    ),
)
