"""The CUDA target's complete pass order."""

from __future__ import annotations

from tilecraft.backend.pipeline import PassPipeline, module_pass
from tilecraft.cuda.ir import shared_accesses
from tilecraft.cuda.op import OP_TABLE
from tilecraft.cuda.target import KIND
from tilecraft.cuda.transform.check import check_cuda_support
from tilecraft.cuda.transform.pipeline import inject_software_pipeline
from tilecraft.cuda.transform.shared_layouts import apply_shared_layouts
from tilecraft.cuda.transform.strict_layouts import cuda_strict_layouts
from tilecraft.layout.inference import infer_layouts
from tilecraft.transform.guard_accesses import guard_accesses
from tilecraft.transform.layout_annotations import apply_layout_annotations
from tilecraft.transform.rasterize import rasterize_blocks
from tilecraft.transform.simplify import simplify_pass
from tilecraft.transform.simt.barriers import insert_barriers
from tilecraft.transform.simt.lower_threads import lower_to_threads
from tilecraft.transform.split_kernels import split_kernels
from tilecraft.transform.storage import storage_pass
from tilecraft.transform.widen import widen_index_arithmetic


@module_pass("split-host-device")
def split_host_device(mod, ctx):
    """Each T.Kernel is a device kernel; the host function launches them in order."""
    return split_kernels(mod)


plan_shared_memory = storage_pass(
    "plan-shared-memory",
    ("shared", "shared.dyn"),
    align=128,
    doc="Shared buffers have offsets in the block's dynamic shared memory; launches carry its size.",
)

PIPELINE = PassPipeline(
    KIND,
    (
        check_cuda_support,  # sm_80+, dtypes and features this backend lowers
        rasterize_blocks,  # T.use_swizzle: blocks renumbered in L2-friendly panels
        simplify_pass,  # index arithmetic, before layouts are chosen
        guard_accesses,  # T.Parallel loads/stores of global memory past an edge: zero / skipped
        apply_layout_annotations(
            keep_fragments=True
        ),  # permuted global buffers addressed through their T.Layout; T.Fragment kept for inference
        infer_layouts(
            cuda_strict_layouts
        ),  # fragment layouts (mma accumulators, propagation, defaults); swizzled gemm tiles
        lower_to_threads(
            OP_TABLE
        ),  # tile ops and T.Parallel nests -> per-thread code; fragments -> registers
        inject_software_pipeline,  # T.Pipelined with cp.async -> multi-stage ring buffers
        apply_shared_layouts,  # swizzled shared tiles addressed by physical offsets
        simplify_pass,  # fold the per-thread index arithmetic
        widen_index_arithmetic,  # int64 where an index value may not fit its dtype
        insert_barriers(shared_accesses),  # __syncthreads between shared writes and other threads' reads
        split_host_device,  # one device kernel per T.Kernel, a host function that launches them
        plan_shared_memory,  # dynamic shared memory offsets with reuse; launch sizes
    ),
)
