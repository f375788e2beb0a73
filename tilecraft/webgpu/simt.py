"""What the shared SIMT passes ask of a WebGPU adapter.

With the `subgroup` feature and a known subgroup size, the thread-group width is the subgroup size and
lanes exchange values through `subgroupShuffleXor`, so reductions within a subgroup stay in registers.
Without either, cross-invocation reductions go through workgroup memory and the width only names how
the layouts split a workgroup into (lane, group), as on OpenCL: 32, which changes index arithmetic only.
"""

from __future__ import annotations

from tilecraft.backend.simt import SimtTarget
from tilecraft.ir import expr as E

NAMING_WIDTH = 32
DEFAULT_MAX_WORKGROUP_SIZE = 1024  # the adapter's own limit (`max_workgroup_size`) is checked before lowering
VECTOR_BYTES = 16
SHUFFLE_XOR = "subgroup_shuffle_xor"  # printed as WGSL's subgroupShuffleXor


def shuffle_xor(value: E.Expr, mask: int) -> E.Expr:
    """The value `value` has in invocation `id ^ mask` of this subgroup."""
    return E.call(SHUFFLE_XOR, value, E.const(mask), dtype=value.dtype)


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def uses_subgroups(target) -> bool:
    """Whether lowering for `target` exchanges values through subgroup operations."""
    return bool(target.attr("subgroups")) and target.attr("subgroup_size") is not None


def webgpu_simt(target) -> SimtTarget:
    """Subgroups of the adapter's size with shuffles where it has them; else workgroup-memory exchange."""
    limit = _pow2_floor(target.attr("max_workgroup_size") or DEFAULT_MAX_WORKGROUP_SIZE)
    if uses_subgroups(target):
        width = target.attr("subgroup_size")
        return SimtTarget(width=width, max_threads=max(limit, width), vector_bytes=VECTOR_BYTES,
                          exchange=shuffle_xor)  # fmt: skip
    return SimtTarget(width=NAMING_WIDTH, max_threads=max(limit, NAMING_WIDTH), vector_bytes=VECTOR_BYTES)
