"""The layout of a reshaped fragment (`T.reshape(F, shape)`): the same threads and registers hold each
element, so the view needs no data movement and shares its base's registers.

A tile layout maps (register, lane, warp) to the tile's coordinates padded to powers of two. A row-major
reshape keeps that map linear when it only regroups bits: split into the smallest runs of dims of the
two shapes with equal products (unit dims aside), every dim of a run but its first is a power of two on
both sides. Then each run's padded coordinates are the bit concatenation of its dims on either side
(`(g, k) -> 128 g + k` reshaping 384 as (3, 128)), and flattening the padded space row-major and
splitting it again moves every element, and every padded position, exactly where the reshape does.
Other reshapes (6 x 10 as 60) would move elements between threads: the caller refuses them.
"""

from __future__ import annotations

import math

from tilecraft.layout.fragment import fragment_dims
from tilecraft.layout.linear import is_power_of_two, next_power_of_two
from tilecraft.layout.tile import TileLayout

__all__ = ["reshape_layout", "reshape_refusal"]


def reshape_refusal(shape: tuple[int, ...], new: tuple[int, ...]) -> str | None:
    """Why a fragment of `shape` cannot be viewed as `new` in the same registers, or None when it can."""
    if math.prod(shape) != math.prod(new):
        return f"{shape} and {new} hold different numbers of elements"
    for old_run, new_run in _runs(shape, new):
        for run in (old_run, new_run):
            odd = [d for d in run[1:] if not is_power_of_two(d)]
            if odd:
                return (
                    f"the dims {tuple(old_run)} of {shape} become {tuple(new_run)}, and a dim of {odd[0]} "
                    "inside such a group is not a power of two, so elements would change threads"
                )
    return None


def reshape_layout(layout: TileLayout, shape: tuple[int, ...]) -> TileLayout | None:
    """`layout` seen through a row-major reshape to `shape`: every element in the thread and register
    that hold it under `layout`; None where `reshape_refusal` gives a reason, or where the layout
    reaches past its padded tile (a nest's `within` layout)."""
    if reshape_refusal(layout.shape, tuple(shape)) is not None:
        return None
    names = fragment_dims(len(layout.shape))
    if any(layout.linear.out_size(n) != next_power_of_two(s) for n, s in zip(names, layout.shape)):
        return None
    padded = [(name, next_power_of_two(s)) for name, s in zip(fragment_dims(len(shape)), shape)]
    return TileLayout(tuple(shape), layout.linear.reshape_outs(padded))


def _runs(shape: tuple[int, ...], new: tuple[int, ...]) -> list[tuple[list[int], list[int]]]:
    """The smallest runs of consecutive dims of `shape` and of `new` (unit dims dropped) whose products
    are equal, in order: a row-major reshape regroups dims within each run only."""
    a, b = [d for d in shape if d != 1], [d for d in new if d != 1]
    runs, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        old_run, new_run = [a[i]], [b[j]]
        i, j = i + 1, j + 1
        while math.prod(old_run) != math.prod(new_run):
            if math.prod(old_run) < math.prod(new_run):
                old_run.append(a[i])
                i += 1
            else:
                new_run.append(b[j])
                j += 1
        runs.append((old_run, new_run))
    return runs
