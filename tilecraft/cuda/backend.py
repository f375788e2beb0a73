"""The CUDA backend's manifest: the one place that assembles and registers it."""

from __future__ import annotations

from tilecraft.backend.api import API_VERSION
from tilecraft.backend.codegen import DeviceCodegen
from tilecraft.backend.errors import TargetError
from tilecraft.backend.module import BackendModule
from tilecraft.backend.registry import register_backend
from tilecraft.cuda.carver import CUDA
from tilecraft.cuda.codegen import BINARY_FORMAT, SOURCE_FORMAT, compile_cubin, device_source
from tilecraft.cuda.op.gemm_plan import (
    DISABLE_TMA,
    DISABLE_WARP_SPECIALIZED,
    DISABLE_WGMMA,
    TRANSPOSED_REGISTER_A,
)
from tilecraft.cuda.op.tma_store import TMA_STORE, TMA_STORE_DOC
from tilecraft.cuda.pipeline import PIPELINE
from tilecraft.cuda.storage import ASSUME_ALIGNED, ASSUME_ALIGNED_DOC
from tilecraft.cuda.target import KIND, SHARED_MEMORY
from tilecraft.cuda.transform.multicast import SWITCH as MULTICAST_SWITCH
from tilecraft.cuda.transform.overlap import OVERLAP
from tilecraft.cuda.transform.warp_specialize import GENERAL
from tilecraft.execution.nvcc.spec import NVCC
from tilecraft.execution.nvrtc.spec import NVRTC
from tilecraft.transform.bounds_checks import BOUNDS_CHECK


def processor_count(ctx) -> int:
    """The target's SM count (`sm_count`: read from the device, or given in the target string)."""
    count = ctx.target.attr("sm_count")
    if count is None:
        raise TargetError(
            f"target {ctx.target} does not know its SM count: add -sm_count=N to the target string, or name "
            "no arch so that it is read from the device"
        )
    return count


CUDA_BACKEND = register_backend(
    BackendModule(
        name="cuda",
        target_kinds=(KIND,),
        pipelines={KIND: PIPELINE},
        device_codegens={
            KIND: DeviceCodegen(device_source, compile_cubin, (SOURCE_FORMAT,), (BINARY_FORMAT,))
        },
        execution_backends=(NVRTC, NVCC),
        callbacks={"processor_count": processor_count, "carver.arch.CUDA": CUDA},
        pass_configs={
            BOUNDS_CHECK: "check every element load and store a kernel writes; an out-of-bounds one is "
            "skipped and the call raises naming the kernel line (debugging: launches are synchronized)",
            DISABLE_WGMMA: "on sm_90a, lower T.gemm to mma.sync m16n8k16 (the sm_80 path) instead of wgmma",
            DISABLE_TMA: "on sm_90a, load wgmma operand tiles with cp.async instead of TMA (and no mbarrier ring), "
            "and store shared tiles to global memory with the threads' own stores instead of TMA stores",
            DISABLE_WARP_SPECIALIZED: "on sm_90a, no producer warpgroup: the kernel's own threads issue the TMA "
            "loads of a T.Pipelined loop in program order (the mbarrier ring without setmaxnreg)",
            GENERAL: "on sm_90a, also warp-specialize T.Pipelined loops with other code between their TMA-fed "
            "gemms (flash attention); on by default, False keeps such loops on the ring without a producer",
            OVERLAP: "on sm_90a, a warp-specialized loop of two wgmma gemms (flash attention) issues the next Q @ K^T "
            "before the previous P @ V and overlaps the softmax with it (FA3's intra-warpgroup overlap); on by "
            "default where the general schedule applies, False switches it off",
            MULTICAST_SWITCH: "on sm_90a, a warp-specialized GEMM in thread-block clusters (T.Kernel cluster_dims) "
            "multicasts the tiles its blocks share (TMA multicast); off by default (slower on an H200), True turns it on",
            ASSUME_ALIGNED: ASSUME_ALIGNED_DOC,
            TMA_STORE: TMA_STORE_DOC,
        },
        unsupported={
            SHARED_MEMORY: "a block has the GPU's max_shared_memory_per_block_optin bytes of shared memory (99 KiB "
            "on sm_86/sm_89, 163 KiB on sm_80, 227 KiB on sm_90; the conformance tiles need up to 192 KiB: "
            "flash_attention_bhsd_causal, 192 KiB as planned, is refused on sm_80)",
            TRANSPOSED_REGISTER_A: "mma.sync takes A from registers only in its own (untransposed) layout; store A "
            "untransposed, or stage it through shared memory",
        },
        dialect="tilecraft.cuda.language",
        doc="NVIDIA GPUs (sm_80+) through CUDA C++: mma.sync (wgmma on sm_90a) tensor cores, cp.async (TMA on sm_90a) pipelines",
        api_version=API_VERSION,
    )
)
