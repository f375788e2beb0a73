"""Loop iterators: `T.Parallel`, `T.Pipelined`, `T.serial`, `T.unroll`, `T.vectorized`, `range`,
`T.Persistent`.

Each returns a `LoopSpec` (`T.Persistent` a `PersistentSpec`); the parser turns `for ... in spec:` into
nested `For` nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Range
from tilecraft.ir.expr import Expr, IntImm, IRError, convert
from tilecraft.ir.stmt import ForKind
from tilecraft.language import builder


@dataclass(frozen=True)
class LoopSpec:
    """One or more nested loops of one kind over `ranges` (outermost first)."""

    kind: ForKind
    ranges: tuple[Range, ...]
    annotations: tuple[tuple[str, object], ...] = ()
    # Per range, (start, step) where the loop has a step other than 1: the range then counts its
    # iterations from 0 and the loop's variable is start + count * step.
    strides: tuple[tuple[Expr, int] | None, ...] = ()

    def __iter__(self):
        raise IRError("loop iterators such as T.Parallel can only be used in a `for` inside a kernel or a "
                      "@T.macro (a plain Python function runs while parsing: its loops are Python loops)")


def _bounds(start, stop) -> tuple[Expr, Expr]:
    """A loop's (start, stop) as integer expressions of one dtype (`range(n)`: stop alone)."""
    if stop is None:
        start, stop = 0, start
    start, stop = convert(start), convert(stop)
    if not (start.dtype.is_integer and stop.dtype.is_integer):
        raise IRError(f"loop bounds must be integers, got {start.dtype} and {stop.dtype}")
    if start.dtype != stop.dtype:
        from tilecraft.ir.expr import match_types

        start, stop = match_types(start, stop)
    return start, stop


def _range(start, stop) -> Range:
    start, stop = _bounds(start, stop)
    rng = Range.from_bounds(start, stop)
    if isinstance(rng.extent, IntImm) and rng.extent.value < 0:
        # A zero-trip loop is an empty loop; a negative trip count is a mistake in the bounds.
        raise builder.error(
            f"loop over [{start}, {stop}) has a negative extent ({rng.extent.value}); a loop runs zero or "
            "more times",
            hint="give the bounds as (start, stop) with start <= stop",
        )
    return rng


def _unit_step(step) -> bool:
    """Whether `step` is absent or the constant 1 (compared without building an IR comparison)."""
    value = step.value if isinstance(step, IntImm) else step
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 1)


def _check_step(step) -> None:
    if not _unit_step(step):
        raise IRError(f"loop step {step} is not supported here; iterate with step 1 and scale the index")


def _constant_step(step) -> int:
    value = step.value if isinstance(step, IntImm) else step
    if isinstance(value, bool) or not isinstance(value, int):
        raise IRError(f"a loop's step must be a constant integer, got {step}")
    if value == 0:
        raise IRError("a loop's step must not be zero")
    return value


def _stepped(kind: ForKind, start, stop, step, annotations: dict | None) -> LoopSpec:
    """`range(start, stop, step)` with a constant step other than 1: its iterations counted from 0, as
    many as Python's range has (none where the step points away from stop)."""
    step = _constant_step(step)
    start, stop = _bounds(start, stop)
    distance = E.sub(stop, start) if step > 0 else E.sub(start, stop)
    trips = E.floordiv(E.add(distance, abs(step) - 1), abs(step))
    if isinstance(trips, IntImm):
        trips = E.const(max(trips.value, 0), trips.dtype)
    else:
        trips = E.max_(trips, E.const(0, trips.dtype))
    count = Range(E.const(0, trips.dtype), trips)
    return LoopSpec(kind, (count,), tuple((annotations or {}).items()), ((start, step),))


def _annotations(**kwargs) -> tuple[tuple[str, object], ...]:
    out = []
    for key, value in kwargs.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = tuple(int(v) for v in value)
        out.append((key, value))
    return tuple(out)


def serial(start, stop=None, step=None, *, annotations: dict | None = None) -> LoopSpec:
    """A sequential loop; `range(...)` means the same inside a kernel."""
    if not _unit_step(step):
        return _stepped(ForKind.SERIAL, start, stop, step, annotations)
    return LoopSpec(ForKind.SERIAL, (_range(start, stop),), tuple((annotations or {}).items()))


def unroll(start, stop=None, step=None, *, annotations: dict | None = None) -> LoopSpec:
    """A sequential loop the backend fully unrolls (extent must be static on most targets)."""
    if not _unit_step(step):
        return _stepped(ForKind.UNROLLED, start, stop, step, annotations)
    return LoopSpec(ForKind.UNROLLED, (_range(start, stop),), tuple((annotations or {}).items()))


def vectorized(start, stop=None, step=None, *, annotations: dict | None = None) -> LoopSpec:
    """A loop whose iterations map to vector lanes."""
    _check_step(step)
    return LoopSpec(ForKind.VECTORIZED, (_range(start, stop),), tuple((annotations or {}).items()))


def Parallel(*extents, coalesced_width: int | None = None, annotations: dict | None = None) -> LoopSpec:  # noqa: N802
    """Independent iterations over a tile; the backend partitions them over the block's threads.

    Each extent is a size or a `(start, stop)` pair.
    """
    if not extents:
        raise IRError("T.Parallel needs at least one extent")
    ranges = tuple(_range(*e) if isinstance(e, (tuple, list)) else _range(e, None) for e in extents)
    extra = _annotations(coalesced_width=coalesced_width) + tuple((annotations or {}).items())
    return LoopSpec(ForKind.PARALLEL, ranges, extra)


def Pipelined(  # noqa: N802
    start,
    stop=None,
    num_stages: int = 0,
    order: Sequence[int] | None = None,
    stage: Sequence[int] | None = None,
    sync: Sequence | None = None,
    group: Sequence | None = None,
    annotations: dict | None = None,
) -> LoopSpec:
    """A sequential loop whose body the backend software-pipelines over `num_stages` stages."""
    extra = _annotations(num_stages=num_stages, order=order, stage=stage)
    if group is not None:
        extra += (("group", tuple(tuple(int(x) for x in g) for g in group)),)
    if sync is not None:
        extra += (("sync", tuple(tuple(int(x) for x in s) for s in sync)),)
    return LoopSpec(ForKind.PIPELINED, (_range(start, stop),), extra + tuple((annotations or {}).items()))


def python_range(start, stop=None, step=None) -> LoopSpec:
    """`range` inside a kernel is a serial loop (TileLang's rule)."""
    return serial(start, stop, step)


@dataclass(frozen=True)
class PersistentSpec:
    """`T.Persistent(domain, wave_size, index, group_size)`: one loop over waves of tiles (see Persistent)."""

    domain: tuple[E.Expr, ...]
    wave_size: E.Expr
    index: E.Expr
    group_size: int

    def __iter__(self):
        raise IRError("T.Persistent can only be used in a `for` inside a kernel")

    def total(self) -> E.Expr:
        out = self.domain[0]
        for d in self.domain[1:]:
            out = E.mul(out, d)
        return out

    def waves(self) -> E.Expr:
        """The waves this block runs: those whose tile `w * wave_size + index` exists (so the body needs
        no guard, and a barrier in it is reached by the whole block or not at all)."""
        left = E.sub(self.total(), self.index)
        return E.floordiv(E.add(left, E.sub(self.wave_size, 1)), self.wave_size)

    def coordinates(self, tile: E.Expr) -> tuple[E.Expr, ...]:
        """The tile's coordinates in `domain`: row-major, or for two dims in groups of `group_size` rows
        (neighbouring blocks share the operand tiles of those rows in L2). A bijection of [0, total)."""
        if len(self.domain) == 2 and self.group_size > 1:
            rows, cols = self.domain
            per_group = E.mul(self.group_size, cols)
            first = E.mul(E.floordiv(tile, per_group), self.group_size)
            height = E.min_(E.sub(rows, first), self.group_size)
            within = E.floormod(tile, per_group)
            return E.add(first, E.floormod(within, height)), E.floordiv(within, height)
        out = []
        rest = tile
        for d in reversed(self.domain[1:]):
            out.append(E.floormod(rest, d))
            rest = E.floordiv(rest, d)
        return (rest, *reversed(out))


def Persistent(domain, wave_size, index, group_size: int | None = 8) -> PersistentSpec:  # noqa: N802
    """TileLang's persistent tile loop: `for bx, by in T.Persistent([m, n], wave_size, index):` runs the
    tiles `w * wave_size + index` (w = 0, 1, ...) of the `m x n` domain that exist, in groups of
    `group_size` rows (None or 1: row-major), so a kernel of `wave_size` blocks, `index` its block index,
    visits every tile once. A backend may schedule the body's pipeline across the block's tiles (its
    docs say where: the For carries the `persistent` annotation)."""
    dims = tuple(convert(d) for d in (domain if isinstance(domain, (list, tuple)) else (domain,)))
    if not dims or not all(d.dtype.is_integer for d in dims):
        raise IRError(f"T.Persistent's domain must be one or more integer extents, got {domain!r}")
    wave, idx = convert(wave_size), convert(index)
    if not (wave.dtype.is_integer and idx.dtype.is_integer):
        raise IRError("T.Persistent's wave_size and index must be integers")
    group = 1 if group_size is None else group_size
    if not isinstance(group, int) or group < 1:
        raise IRError(f"T.Persistent's group_size must be a positive Python int or None, got {group_size!r}")
    return PersistentSpec(dims, wave, idx, group)
