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


# Named barriers: 0 is __syncthreads, 1 the consumers of a warp-specialized kernel (transform/warp_specialize.py).
FIRST_GROUP_BARRIER, LAST_BARRIER = 2, 15


def group_barrier(threads, index: int):
    """`bar.sync id, count` among the threads of one thread group (a branch on the thread index), one id
    per distinct group of the kernel."""
    from tilecraft.cuda.ir import NamedBarrier
    from tilecraft.errors import LoweringError

    barrier = FIRST_GROUP_BARRIER + index
    if barrier > LAST_BARRIER:
        raise LoweringError(
            f"this kernel's branches on the thread index form more than {LAST_BARRIER - FIRST_GROUP_BARRIER + 1} "
            "thread groups that synchronize, and a CUDA block has 16 barriers"
        )
    return NamedBarrier(barrier, threads.count)


WARPS = SimtTarget(
    width=WARP_SIZE, max_threads=MAX_THREADS_PER_BLOCK, vector_bytes=VECTOR_BYTES, exchange=shuffle_xor,
    partial_barrier=group_barrier,
)  # fmt: skip


def cuda_simt(target) -> SimtTarget:
    """Every CUDA arch tilecraft lowers for (sm_80 on) has the same warps, block limit and shuffle."""
    return WARPS
