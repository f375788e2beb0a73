"""What the shared SIMT passes ask of an NVIDIA GPU: warps of 32 threads, blocks of up to 1024, 16-byte
vector accesses (`ld.global.v4`, `cp.async` of 16 bytes), and the warp shuffle for cross-lane exchange."""

from __future__ import annotations

from tilecraft.backend.simt import SimtTarget
from tilecraft.cuda.intrinsics.mma_layouts import WARP_SIZE
from tilecraft.ir import expr as E

MAX_THREADS_PER_BLOCK = 1024
VECTOR_BYTES = 16
SHUFFLE_XOR = "shfl_xor"  # the intrinsic cuda/printer.py prints as __shfl_xor_sync over the full warp


def shuffle_xor(value: E.Expr, mask: int) -> E.Expr:
    """The value `value` has in lane `lane ^ mask` of this warp (every lane of the warp takes part)."""
    return E.call(SHUFFLE_XOR, value, E.const(mask), dtype=value.dtype)


WARPS = SimtTarget(
    width=WARP_SIZE, max_threads=MAX_THREADS_PER_BLOCK, vector_bytes=VECTOR_BYTES, exchange=shuffle_xor
)


def cuda_simt(target) -> SimtTarget:
    """Every CUDA arch tilecraft lowers for (sm_80 on) has the same warps, block limit and shuffle."""
    return WARPS
