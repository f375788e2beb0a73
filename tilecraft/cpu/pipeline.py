"""The CPU target's complete pass order."""

from __future__ import annotations

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.cpu.op import OP_TABLE
from tilecraft.cpu.storage import plan_block_storage
from tilecraft.cpu.target import KIND
from tilecraft.cpu.transform.block_model import apply_block_model, check_block_model, run_thread_groups
from tilecraft.cpu.transform.mbarriers import emulate_mbarriers
from tilecraft.transform.buffer_views import lower_buffer_views
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.lower_tile_ops import lower_tile_ops
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.split_kernels import split_host_device_pass
from tilecraft.transform.widen import widen_index_arithmetic

BOUNDS_CHECK = "tilecraft.bounds_check"


@module_pass("mark-bounds-checks")
def mark_bounds_checks(mod, ctx):
    """With pass config `tilecraft.bounds_check`, device functions check every buffer access."""
    if not ctx.config(BOUNDS_CHECK, False):
        return mod
    return mod.with_functions(
        f.with_attr(BOUNDS_CHECK, True) if f.attr("tilecraft.role") == "device" else f for f in mod.functions
    )


PIPELINE = PassPipeline(
    KIND,
    (
        emulate_mbarriers,  # T.alloc_barrier's mbarriers: counters that program order must satisfy
        run_thread_groups,  # `if thread index < c: A else: B` (thread groups): A then B
        check_block_model,  # reject other thread-index code: a block runs as one thread
        apply_block_model,  # drop rasterization hints, serialize T.Pipelined, barriers are no-ops
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=False
        ),  # permuted global buffers addressed through their T.Layout; other layouts are hints here
        lower_tile_ops(OP_TABLE),  # copy/fill/gemm/reduce/cumsum/atomics -> loops and kernel calls
        lower_buffer_views,  # accesses through T.Tensor(shape, dtype, A.data) views address A
        simplify_pass,  # fold the index arithmetic the lowering produced
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        split_host_device_pass,  # one device function per T.Kernel, a host function that launches them
        plan_block_storage,  # per-block scratch offsets, with reuse; launches carry the size
        mark_bounds_checks,  # opt-in debug checks on every buffer access
    ),
)
