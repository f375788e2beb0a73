"""What the shared SIMT passes ask of an Apple GPU: SIMD groups of 32 threads, threadgroups of up to
1024, 16-byte accesses, `simd_shuffle_xor` for a lane exchange and `simd_sum` / `simd_max` /
`simd_min` when a reduction spans the whole SIMD group.

The shuffles go through the header's `tc_simd_shuffle_xor` overloads, which split 64-bit values into
two 32-bit shuffles (MSL shuffles 32-bit and narrower scalars). The group reductions are used for
float32, int32 and uint32 values only, the types every Apple family reduces in one instruction.
"""

from __future__ import annotations

from tilecraft.backend.simt import SimtTarget
from tilecraft.ir import expr as E

SIMD_WIDTH = 32
MAX_THREADS = 1024  # a target's own `max_threads` is checked before lowering
VECTOR_BYTES = 16
SHUFFLE_XOR = "metal_simd_shuffle_xor"
GROUP_REDUCTIONS = {"sum": "metal_simd_sum", "max": "metal_simd_max", "min": "metal_simd_min"}
GROUP_REDUCTION_DTYPES = ("float32", "int32", "uint32")


def shuffle_xor(value: E.Expr, mask: int) -> E.Expr:
    """The value `value` has in lane `lane ^ mask` of this SIMD group."""
    return E.call(SHUFFLE_XOR, value, E.const(mask), dtype=value.dtype)


def reduce_simdgroup(kind: str, value: E.Expr) -> E.Expr | None:
    """simd_sum / simd_max / simd_min of `value` over the SIMD group, where MSL has one."""
    op = GROUP_REDUCTIONS.get(kind)
    if op is None or value.dtype.name not in GROUP_REDUCTION_DTYPES:
        return None
    return E.call(op, value, dtype=value.dtype)


SIMD_GROUPS = SimtTarget(
    width=SIMD_WIDTH,
    max_threads=MAX_THREADS,
    vector_bytes=VECTOR_BYTES,
    exchange=shuffle_xor,
    reduce_group=reduce_simdgroup,
)


def metal_simt(target) -> SimtTarget:
    """The same for every Apple family: SIMD groups of 32 with shuffles and group reductions."""
    return SIMD_GROUPS
