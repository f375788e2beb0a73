"""TileLang's thread-group position helpers: which lane, warp and warp group a thread of the block is,
as expressions of its (linear) thread index. A `warp_size` of None is the target's thread-group width
(a warp, a wavefront or a SIMD group; DEFAULT_GROUP_WIDTH where blocks have no lockstep groups), resolved
at lowering as T.warp_reduce_*'s width is."""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir.expr import Expr, IRError
from tilecraft.language import builder

# TileLang's default warps per warp group (a Hopper warp group is 4 warps).
WARPS_PER_GROUP = 4


def _thread_index(what: str) -> Expr:
    """The thread's linear index in the block: x fastest, as the launch numbers threads."""
    ctx = builder.current(what).kernel(what)
    index: Expr = ctx.thread_vars[0]
    stride: Expr | int = 1
    for k in range(1, len(ctx.thread_vars)):
        stride = E.mul(stride, ctx.thread_extents[k - 1]) if ctx.thread_extents else stride
        index = E.add(index, E.mul(ctx.thread_vars[k], stride))
    return index


def _width(what: str, warp_size) -> Expr:
    if warp_size is None:
        from tilecraft.transform.allreduce import GROUP_WIDTH_CALL

        return E.call(GROUP_WIDTH_CALL, dtype="int32")
    if isinstance(warp_size, int) and warp_size <= 0:
        raise IRError(f"{what}: warp_size must be positive, got {warp_size}")
    return _int(warp_size)


def _int(value: int | Expr) -> Expr:
    return E.const(value, "int32") if isinstance(value, int) else value


def get_lane_idx(warp_size: int | Expr | None = None) -> Expr:
    """The thread's lane in its warp: thread index % warp_size."""
    return E.floormod(_thread_index("T.get_lane_idx"), _width("T.get_lane_idx", warp_size))


def get_warp_idx_sync(warp_size: int | Expr | None = None) -> Expr:
    """The thread's warp in the block: thread index // warp_size (the same for every thread of a warp)."""
    return E.floordiv(_thread_index("T.get_warp_idx_sync"), _width("T.get_warp_idx_sync", warp_size))


def get_warp_idx(warp_size: int | Expr | None = None) -> Expr:
    """As T.get_warp_idx_sync (TileLang's unsynchronized variant gives the same number)."""
    return E.floordiv(_thread_index("T.get_warp_idx"), _width("T.get_warp_idx", warp_size))


def get_warp_group_idx(warp_size: int | Expr | None = None, warps_per_group: int | Expr | None = None) -> Expr:
    """The thread's warp group: thread index // (warp_size * warps_per_group), 4 warps by default."""
    what = "T.get_warp_group_idx"
    per_group = WARPS_PER_GROUP if warps_per_group is None else warps_per_group
    if isinstance(per_group, int) and per_group <= 0:
        raise IRError(f"{what}: warps_per_group must be positive, got {per_group}")
    return E.floordiv(_thread_index(what), E.mul(_width(what, warp_size), _int(per_group)))


def shuffle_elect(thread_extent: int = 0) -> Expr:
    """True for one thread of each group of `thread_extent` consecutive threads (its first); 0 elects the
    block's first thread."""
    if not isinstance(thread_extent, int) or thread_extent < 0:
        raise IRError(f"T.shuffle_elect: thread_extent must be a non-negative int, got {thread_extent!r}")
    index = _thread_index("T.shuffle_elect")
    if thread_extent == 0:
        return E.compare(E.EQ, index, 0)
    return E.compare(E.EQ, E.floormod(index, thread_extent), 0)
