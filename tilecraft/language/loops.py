"""Loop iterators: `T.Parallel`, `T.Pipelined`, `T.serial`, `T.unroll`, `T.vectorized`, `range`.

Each returns a `LoopSpec`; the parser turns `for ... in spec:` into nested `For` nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilecraft.ir.buffer import Range
from tilecraft.ir.expr import IntImm, IRError, convert
from tilecraft.ir.stmt import ForKind
from tilecraft.language import builder


@dataclass(frozen=True)
class LoopSpec:
    """One or more nested loops of one kind over `ranges` (outermost first)."""

    kind: ForKind
    ranges: tuple[Range, ...]
    annotations: tuple[tuple[str, object], ...] = ()

    def __iter__(self):
        raise IRError("loop iterators such as T.Parallel can only be used in a `for` inside a kernel")


def _range(start, stop) -> Range:
    if stop is None:
        start, stop = 0, start
    start, stop = convert(start), convert(stop)
    if not (start.dtype.is_integer and stop.dtype.is_integer):
        raise IRError(f"loop bounds must be integers, got {start.dtype} and {stop.dtype}")
    if start.dtype != stop.dtype:
        from tilecraft.ir.expr import match_types

        start, stop = match_types(start, stop)
    rng = Range.from_bounds(start, stop)
    if isinstance(rng.extent, IntImm) and rng.extent.value < 0:
        # A zero-trip loop is an empty loop; a negative trip count is a mistake in the bounds.
        raise builder.error(
            f"loop over [{start}, {stop}) has a negative extent ({rng.extent.value}); a loop runs zero or "
            "more times",
            hint="give the bounds as (start, stop) with start <= stop",
        )
    return rng


def _check_step(step) -> None:
    if step not in (None, 1):
        raise IRError(f"loop step {step} is not supported; iterate with step 1 and scale the index")


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
    _check_step(step)
    return LoopSpec(ForKind.SERIAL, (_range(start, stop),), tuple((annotations or {}).items()))


def unroll(start, stop=None, step=None, *, annotations: dict | None = None) -> LoopSpec:
    """A sequential loop the backend fully unrolls (extent must be static on most targets)."""
    _check_step(step)
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
