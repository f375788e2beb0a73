"""Tile operations: copy, fill, clear, gemm, reductions, cumsum, atomics.

Operands are buffers, regions (`A[i:j, :]`) or start indices (`A[by * bm, k * bk]`), whose extents
come from the other operand. The ops stay whole in the IR; backends lower them.
"""

from __future__ import annotations

from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.expr import BufferLoad, Expr, IRError, cast, const, const_value, convert, same_expr
from tilecraft.ir.stmt import (
    COPY_KEYWORDS,
    AtomicOp,
    BufferStore,
    Copy,
    Cumsum,
    Fill,
    Gemm,
    GemmWarpPolicy,
    Reduce,
    Stmt,
)
from tilecraft.language import builder

Operand = Buffer | BufferRegion | BufferLoad


def _span():
    return builder.current_span()


def _describe(x) -> str:
    return type(x).__name__ if not isinstance(x, (int, float)) else repr(x)


def region_of(x, what: str) -> BufferRegion | None:
    """The region an operand denotes, or None for a start-index operand (extents unknown yet)."""
    if isinstance(x, Buffer):
        return x.full_region()
    if isinstance(x, BufferRegion):
        return x
    if isinstance(x, BufferLoad):
        return None
    raise IRError(
        f"{what} expects a buffer, a region such as A[i:j, :] or a start index A[i, j]; got {_describe(x)}"
    )


def region_from_start(load: BufferLoad, extents: tuple[Expr, ...], what: str) -> BufferRegion:
    """`A[i, j]` with extents from the other operand, aligned to the trailing dimensions."""
    rank = load.buffer.ndim
    if len(extents) > rank:
        raise IRError(
            f"{what}: the start index {load.buffer.name}[...] has {rank} dims but the other operand has "
            f"{len(extents)}; give a region with explicit slices instead"
        )
    ones = (const(1, e.dtype) for e in load.indices[: rank - len(extents)])
    full = (*ones, *extents)
    return BufferRegion(load.buffer, tuple(Range(i, e) for i, e in zip(load.indices, full)))


def _pair(a, b, what: str) -> tuple[BufferRegion, BufferRegion]:
    ra, rb = region_of(a, what), region_of(b, what)
    if ra is None and rb is None:
        raise IRError(f"{what}: both operands are start indices, so the extent is unknown; slice one of them")
    if ra is None:
        ra = region_from_start(a, _nonunit_tail(rb), what)
    if rb is None:
        rb = region_from_start(b, _nonunit_tail(ra), what)
    return ra, rb


def _nonunit_tail(region: BufferRegion) -> tuple[Expr, ...]:
    """Extents of `region` with leading unit dims dropped (a 3-D batch slice feeding a 2-D tile)."""
    extents = list(region.shape)
    while len(extents) > 1 and isinstance(extents[0], Expr) and getattr(extents[0], "value", None) == 1:
        extents.pop(0)
    return tuple(extents)


def copy(src: Operand, dst: Operand, coalesced_width: int | None = None, disable_tma: bool = False,
         eviction_policy: str | None = None, annotations: dict | None = None) -> Copy | BufferStore:  # fmt: skip
    """Copy `src` into `dst`; reads past a tensor's edge give zero and writes past it are skipped.
    `annotations` are extra keys carried on the op (TileLang's; printed IR keeps them). Between two
    elements (both operands start indices, TileLang's rule) it is that one element's store."""
    if isinstance(src, BufferLoad) and isinstance(dst, BufferLoad):
        return _element_copy(src, dst)
    s, d = _pair(src, dst, "T.copy")
    d = _fit_destination(s, d)
    ann = []
    if coalesced_width is not None:
        ann.append(("coalesced_width", int(coalesced_width)))
    if disable_tma:
        ann.append(("disable_tma", True))
    if eviction_policy is not None:
        ann.append(("eviction_policy", str(eviction_policy)))
    ann += [(str(k), v) for k, v in (annotations or {}).items() if k not in COPY_KEYWORDS]
    return Copy(s, d, tuple(ann), span=_span())


# TileLang's copy iterates over one side's extents: the side in the nearer memory, the source on a tie.
_COPY_LEVELS = {"local": 2, "local.fragment": 2, "shared": 1, "shared.dyn": 1}


def _fit_destination(src: BufferRegion, dst: BufferRegion) -> BufferRegion:
    """`dst` cut to `src`'s extents where TileLang's copy writes only those: it iterates over the source
    (in memory as near as the destination's or nearer) and each of the source's non-unit extents is a
    constant no larger than the destination's (`T.copy(A[:, :2], B[:, :3])` writes `B[:, :2]`). Other
    differing extents stay as written, for the semantic check to refuse: TileLang reads or writes past
    one side's region there, or stops."""
    s_dims, d_dims = _nonunit_dims(src), _nonunit_dims(dst)
    if len(s_dims) != len(d_dims):
        return dst
    if _COPY_LEVELS.get(src.buffer.scope, 0) < _COPY_LEVELS.get(dst.buffer.scope, 0):
        return dst
    ranges, cut = list(dst.ranges), False
    for a, b in zip(s_dims, d_dims):
        s_ext, d_ext = src.ranges[a].extent, dst.ranges[b].extent
        sv, dv = const_value(s_ext), const_value(d_ext)
        if same_expr(s_ext, d_ext) or (sv is not None and sv == dv):
            continue
        if not (isinstance(sv, int) and isinstance(dv, int) and sv < dv):
            return dst
        ranges[b], cut = Range(dst.ranges[b].min, s_ext), True
    return BufferRegion(dst.buffer, tuple(ranges)) if cut else dst


def _nonunit_dims(region: BufferRegion) -> list[int]:
    return [k for k, r in enumerate(region.ranges) if const_value(r.extent) != 1]


def _element_copy(src: BufferLoad, dst: BufferLoad) -> BufferStore:
    if any(i.dtype.lanes != 1 for i in (*src.indices, *dst.indices)):
        raise IRError("T.copy: a vector element access is not a region; slice the buffer instead")
    return BufferStore(dst.buffer, cast(src, dst.dtype), dst.indices, span=_span())


def fill(buffer: Operand, value) -> Fill:
    """Set every element of `buffer` (or a region) to `value`."""
    region = _filled_region(buffer, "T.fill")
    return Fill(region, convert(value, region.dtype) if not isinstance(value, Expr) else value, span=_span())


def _filled_region(x: Operand, what: str) -> BufferRegion:
    """The region T.fill / T.clear set: a buffer, a region, or, as in TileLang, the one element `A[i, j]`
    (a `T.alloc_var` scalar by name is its element, so `T.clear(acc)` zeroes the variable)."""
    region = region_of(x, what)
    if region is not None:
        return region
    if any(i.dtype.lanes != 1 for i in x.indices):
        raise IRError(f"{what}: a vector element access is not a region; slice the buffer instead")
    return BufferRegion(x.buffer, tuple(Range(i, const(1, i.dtype)) for i in x.indices))


def clear(buffer: Operand) -> Fill:
    """Set every element of `buffer` to zero."""
    region = _filled_region(buffer, "T.clear")
    return Fill(region, const(0, region.dtype), span=_span())


def gemm(A: Operand, B: Operand, C: Operand, transpose_A: bool = False, transpose_B: bool = False,
         policy: GemmWarpPolicy = GemmWarpPolicy.Square, clear_accum: bool = False, k_pack: int = 1,
         wg_wait: int = 0, annotations: dict | None = None) -> Gemm:  # fmt: skip  # noqa: N803
    """`C += op(A) @ op(B)` (`C = ...` with `clear_accum`); op transposes where asked. `annotations` are
    what a backend's pass recorded on the gemm (printed IR spells them so; kernels need none)."""
    regions = [region_of(x, "T.gemm") for x in (A, B, C)]
    if any(r is None for r in regions):
        raise IRError("T.gemm operands must be whole buffers or sliced regions, not start indices")
    if not isinstance(policy, GemmWarpPolicy):
        raise IRError(f"T.gemm policy must be a T.GemmWarpPolicy, got {policy!r}")
    return Gemm(*regions, bool(transpose_A), bool(transpose_B), policy, bool(clear_accum), int(k_pack),
                int(wg_wait), tuple((annotations or {}).items()), span=_span())  # fmt: skip


def _reduce(kind: str, buffer: Operand, out: Operand, dim: int, clear: bool, nan_propagate: bool = True) -> Reduce:
    src, dst = region_of(buffer, f"T.reduce_{kind}"), region_of(out, f"T.reduce_{kind}")
    if src is None or dst is None:
        raise IRError(f"T.reduce_{kind} operands must be whole buffers or sliced regions")
    dim = int(dim)
    if -len(src.ranges) <= dim < 0:
        dim += len(src.ranges)
    return Reduce(kind, src, dst, dim, bool(clear), bool(nan_propagate), span=_span())


# What T.reduce_max / reduce_min / reduce_absmax do with NaN when the call does not say: tilecraft's
# default propagates it (NumPy's maximum); the TileLang import hook (tilecraft.compat) sets TileLang's
# default, NaN ignored, for the process it runs TileLang's programs in (docs/compat.md). The choice is
# made while parsing and carried in the IR, so it is part of every cache key.
NAN_PROPAGATE_DEFAULT = [True]


def _nan_propagating(nan_propagate: bool | None) -> bool:
    return NAN_PROPAGATE_DEFAULT[0] if nan_propagate is None else bool(nan_propagate)


def reduce_max(buffer, out, dim: int = -1, clear: bool = True, nan_propagate: bool | None = None) -> Reduce:
    """`out = max over dim of buffer` (combined with out's value when clear=False). `nan_propagate`
    (float dtypes): True, a NaN element gives NaN (NumPy's maximum, tilecraft's default); False, NaN
    elements are ignored (C's fmax: the largest non-NaN element, NaN only when all are NaN)."""
    return _reduce("max", buffer, out, dim, clear, _nan_propagating(nan_propagate))


def reduce_min(buffer, out, dim: int = -1, clear: bool = True, nan_propagate: bool | None = None) -> Reduce:
    """`out = min over dim of buffer`; `nan_propagate` as for T.reduce_max."""
    return _reduce("min", buffer, out, dim, clear, _nan_propagating(nan_propagate))


def reduce_sum(buffer, out, dim: int = -1, clear: bool = True) -> Reduce:
    return _reduce("sum", buffer, out, dim, clear)


def reduce_abssum(buffer, out, dim: int = -1, clear: bool = True) -> Reduce:
    return _reduce("abssum", buffer, out, dim, clear)


def reduce_absmax(buffer, out, dim: int = -1, clear: bool = True, nan_propagate: bool | None = None) -> Reduce:
    """`out = max over dim of |buffer|`; `nan_propagate` as for T.reduce_max (dst's value, with
    clear=False, is combined as it is, not its absolute value, as in TileLang)."""
    return _reduce("absmax", buffer, out, dim, clear, _nan_propagating(nan_propagate))


def cumsum(src: Operand, dst: Operand | None = None, dim: int = 0, reverse: bool = False) -> Cumsum:
    """Inclusive prefix sum along `dim`; in place when `dst` is omitted."""
    return _scan("sum", src, dst, dim, reverse)


def cummax(src: Operand, dst: Operand | None = None, dim: int = 0, reverse: bool = False) -> Cumsum:
    """Inclusive running maximum along `dim` (TileLang's T.cummax); in place when `dst` is omitted."""
    return _scan("max", src, dst, dim, reverse)


def cummin(src: Operand, dst: Operand | None = None, dim: int = 0, reverse: bool = False) -> Cumsum:
    """Inclusive running minimum along `dim`; in place when `dst` is omitted."""
    return _scan("min", src, dst, dim, reverse)


def _scan(kind: str, src: Operand, dst: Operand | None, dim: int, reverse: bool) -> Cumsum:
    what = f"T.cum{kind}"
    s = region_of(src, what)
    d = s if dst is None else region_of(dst, what)
    if s is None or d is None:
        raise IRError(f"{what} operands must be whole buffers or sliced regions")
    dim = int(dim)
    if -len(s.ranges) <= dim < 0:
        dim += len(s.ranges)
    return Cumsum(s, d, dim, bool(reverse), kind, span=_span())


def _atomic(kind: str, dst, value) -> AtomicOp | Stmt:
    what = f"T.atomic_{kind}"
    if isinstance(value, (Buffer, BufferRegion)):
        value_region = region_of(value, what)
        d = region_of(dst, what)
        if d is None:
            d = region_from_start(dst, _nonunit_tail(value_region), what)
        return AtomicOp(kind, d, value_region, span=_span())
    if not isinstance(dst, BufferLoad):
        region = region_of(dst, what)
        if region is None:
            raise IRError(f"{what} needs a destination element (C[i, j]), a buffer or a region")
        return _atomic_broadcast(kind, region, value)
    one = tuple(Range(i, const(1, i.dtype)) for i in dst.indices)
    return AtomicOp(kind, BufferRegion(dst.buffer, one), convert(value, dst.dtype), span=_span())


def _atomic_broadcast(kind: str, region: BufferRegion, value) -> Stmt:
    """A scalar into every element of a region: a T.Parallel nest of one-element atomics, each iteration
    updating its element once (elements past the buffer's edge skipped, as a region atomic does)."""
    from tilecraft.ir import expr as E
    from tilecraft.ir.stmt import IfThenElse
    from tilecraft.transform.tile_loops import (
        conjunction,
        edge_conditions,
        loop_extents,
        make_loop_vars,
        parallel_nest,
        region_index,
    )

    span = _span()
    extents = loop_extents(region)
    loop_vars = make_loop_vars(len(extents), "a")
    index = region_index(region, loop_vars)
    element = BufferRegion(region.buffer, tuple(Range(i, const(1, i.dtype)) for i in index))
    body: Stmt = AtomicOp(kind, element, E.cast(convert(value), region.dtype), span=span)
    guard = conjunction(edge_conditions(region, index))
    if guard is not None:
        body = IfThenElse(guard, body, span=span)
    return parallel_nest(loop_vars, extents, body, span)


def _memory_order(what: str, kind: str, memory_order: str | None) -> str:
    """The order of an atomic expression; None is relaxed for an update (as GPUs' plain atomics are) and
    sequentially consistent for a load or store (as C++'s defaults are)."""
    from tilecraft.ir.expr import ATOMIC_VALUE_ORDERS

    if memory_order is None:
        return "relaxed" if kind in ("add", "max", "min") else "seq_cst"
    allowed = ATOMIC_VALUE_ORDERS[kind]
    if memory_order not in allowed:
        raise ValueError(f"{what} does not support memory_order={memory_order!r}; "
                         f"use one of {', '.join(allowed)}")  # fmt: skip
    return memory_order


def _atomic_value(what: str, kind: str, target, value, memory_order: str | None) -> Expr:
    """An atomic expression on one element: `target` must be an element (`B[i, j]`)."""
    from tilecraft.ir.expr import AtomicValue

    order = _memory_order(what, kind, memory_order)
    if not isinstance(target, BufferLoad):
        raise IRError(f"{what} takes one element (B[i, j]), got {type(target).__name__}; write a "
                      "T.Parallel loop over the region for elementwise atomics")  # fmt: skip
    if target.buffer.scope != "global":
        raise IRError(f"{what} needs an element of global memory, got {target.buffer.scope} buffer "
                      f"{target.buffer.name}; a block's own buffers need no atomics to be read or written")  # fmt: skip
    operand = None if value is None else convert(value, target.dtype)
    if operand is not None and operand.dtype != target.dtype:
        from tilecraft.ir import expr as E

        operand = E.cast(operand, target.dtype)
    return AtomicValue(target.dtype, kind, target, operand, order, span=_span())


def atomic_load(src, memory_order: str | None = None) -> Expr:
    """The value of one element of global memory, read atomically (`memory_order`: relaxed, consume,
    acquire or seq_cst, the default)."""
    return _atomic_value("atomic_load", "load", src, None, memory_order)


def atomic_store(dst, value, memory_order: str | None = None) -> Stmt:
    """Write `value` into one element of global memory atomically (`memory_order`: relaxed, release or
    seq_cst, the default)."""
    from tilecraft.ir.stmt import Evaluate

    return Evaluate(_atomic_value("atomic_store", "store", dst, value, memory_order), span=_span())


def atomic_add(dst, value, memory_order: str | None = None, return_prev: bool = False,
               use_tma: bool = False) -> AtomicOp | Stmt | Expr:  # fmt: skip
    """Atomically add `value` (a scalar, or a buffer/region elementwise) into `dst` (an element, or every
    element of a buffer or region for a scalar). `use_tma` (TileLang's TMA reduction of a shared tile
    into global memory on Hopper) changes nothing in the result: every target makes the update with its
    atomics. With `return_prev=True` the update of one element is an expression whose value is the
    element's value before it."""
    if return_prev:
        return _atomic_value("atomic_add", "add", dst, value, memory_order)
    _memory_order("atomic_add", "add", memory_order)
    return _atomic("add", dst, value)


def atomic_max(dst, value, memory_order: str | None = None,
               return_prev: bool = False) -> AtomicOp | Stmt | Expr:  # fmt: skip
    if return_prev:
        return _atomic_value("atomic_max", "max", dst, value, memory_order)
    _memory_order("atomic_max", "max", memory_order)
    return _atomic("max", dst, value)


def atomic_min(dst, value, memory_order: str | None = None,
               return_prev: bool = False) -> AtomicOp | Stmt | Expr:  # fmt: skip
    if return_prev:
        return _atomic_value("atomic_min", "min", dst, value, memory_order)
    _memory_order("atomic_min", "min", memory_order)
    return _atomic("min", dst, value)


def atomic_addx2(dst, value, return_prev: bool = False) -> list[AtomicOp] | Expr:
    """TileLang's paired add: `dst[..., j]` and `dst[..., j + 1]` get `value`'s elements at the same two
    positions (`T.atomic_addx2(B[i, j], A[i, j])`), each by its own atomic add. With `return_prev=True`
    it is a two-lane vector value, lane k the element's value before its add (`P[0:2] = T.atomic_addx2(
    B[0:2], A[0:2], return_prev=True)`)."""
    return _atomic_add_lanes("T.atomic_addx2", dst, value, 2, return_prev)


def atomic_addx4(dst, value, return_prev: bool = False) -> list[AtomicOp] | Expr:
    """As `T.atomic_addx2`, for four consecutive elements of the last dim."""
    return _atomic_add_lanes("T.atomic_addx4", dst, value, 4, return_prev)


def _atomic_add_lanes(what: str, dst, value, lanes: int, return_prev: bool) -> list[AtomicOp] | Expr:
    from tilecraft.ir import expr as E

    if return_prev:
        return _atomic_add_lanes_value(what, dst, value, lanes)
    if isinstance(dst, BufferRegion) and isinstance(value, BufferRegion):
        return [_atomic_lane_regions(what, dst, value, lanes)]
    if not isinstance(dst, BufferLoad) or not isinstance(value, BufferLoad):
        raise IRError(f"{what} takes the first of {lanes} consecutive elements of a destination and of a "
                      "source, e.g. (B[i, j], A[i, j])")  # fmt: skip

    ops = []
    for d, v in zip(_lane_elements(what, dst, lanes), _lane_elements(what, value, lanes), strict=True):
        one = tuple(Range(i, const(1, i.dtype)) for i in d.indices)
        ops.append(AtomicOp("add", BufferRegion(d.buffer, one), E.cast(v, dst.dtype), span=_span()))
    return ops


def _atomic_add_lanes_value(what: str, dst, value, lanes: int) -> Expr:
    """The paired add as a vector value: lane k is `T.atomic_add(dst lane k, value lane k,
    return_prev=True)` (each lane its own atomic, as the statement form)."""
    from tilecraft.ir import expr as E
    from tilecraft.language.packed import VECTOR

    targets, values = _lane_elements(what, dst, lanes), _lane_elements(what, value, lanes)
    prev = tuple(_atomic_value(what, "add", t, v, None) for t, v in zip(targets, values, strict=True))
    return E.Call(prev[0].dtype.with_lanes(lanes), VECTOR, prev)


def _lane_elements(what: str, x, lanes: int) -> list[Expr]:
    """The `lanes` consecutive elements of the last dim that `x` names: a region of that many (`B[i, 0:2]`),
    a vector load (`B[T.Ramp(j, 1, 2)]`) or the first element (`B[i, j]`); or the lanes of a value."""
    from tilecraft.ir import expr as E
    from tilecraft.language.packed import is_vector, lane

    if isinstance(x, BufferRegion):
        _check_lane_region(what, x, lanes)
        *outer, last = (r.min for r in x.ranges)
        return [E.BufferLoad(x.buffer.dtype, x.buffer, (*outer, E.add(last, const(k, last.dtype))))
                for k in range(lanes)]  # fmt: skip
    if isinstance(x, Expr) and is_vector(x):
        if x.dtype.lanes != lanes:
            raise IRError(f"{what} takes {lanes} lanes, got a value of {x.dtype}")
        return [lane(x, k) for k in range(lanes)]
    if isinstance(x, E.BufferLoad):
        *outer, last = x.indices
        return [E.BufferLoad(x.dtype, x.buffer, (*outer, E.add(last, const(k, last.dtype))))
                for k in range(lanes)]  # fmt: skip
    raise IRError(f"{what} takes {lanes} consecutive elements (B[i, j:j + {lanes}], B[T.Ramp(j, 1, {lanes})] "
                  f"or the first, B[i, j]), got {type(x).__name__}")  # fmt: skip


def _atomic_lane_regions(what: str, dst: BufferRegion, value: BufferRegion, lanes: int) -> AtomicOp:
    """The sliced form, `T.atomic_addx4(B[i, 0:4], A[t, 0:4])`: an elementwise region add of `lanes`
    elements."""
    for region in (dst, value):
        _check_lane_region(what, region, lanes)
    return AtomicOp("add", dst, value, span=_span())


def _check_lane_region(what: str, region: BufferRegion, lanes: int) -> None:
    extents = [const_value(r.extent) for r in region.ranges]
    if extents[-1] != lanes or any(e != 1 for e in extents[:-1]):
        raise IRError(f"{what} of regions needs {lanes} elements of the last dim, got {region}")
