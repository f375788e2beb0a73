"""What the shared SIMT passes ask of an AMD GPU: wavefronts of the target's width (64 on CDNA, 32 on
RDNA), work-groups of up to 1024 work-items, 16-byte vector accesses (`global_load_dwordx4`), and a
cross-lane exchange through `ds_bpermute_b32` (HIP's own `__shfl_xor` is built on it), which any lane
mask of the wavefront can use, at either width."""

from __future__ import annotations

from functools import cache

from tilecraft.backend.simt import SimtTarget
from tilecraft.ir import expr as E

MAX_THREADS_PER_BLOCK = 1024
VECTOR_BYTES = 16
LANE_XOR = "lane_xor"  # the intrinsic hip/printer.py prints as tc_lane_xor (tc_hip.h: ds_bpermute)


def lane_xor(value: E.Expr, mask: int) -> E.Expr:
    """The value `value` has in lane `lane ^ mask` of this wavefront (every lane takes part)."""
    return E.call(LANE_XOR, value, E.const(mask), dtype=value.dtype)


@cache
def wavefronts(width: int) -> SimtTarget:
    return SimtTarget(
        width=width, max_threads=MAX_THREADS_PER_BLOCK, vector_bytes=VECTOR_BYTES, exchange=lane_xor
    )


def hip_simt(target) -> SimtTarget:
    """Wavefronts of the target's `wavefront` lanes."""
    return wavefronts(target.attr("wavefront"))
