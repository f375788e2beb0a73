"""Tile layouts as the SIMT pipelines use them: a linear layout plus the logical shape it covers.

A `TileLayout` says, for a fragment or a `T.Parallel` nest over a tile, which thread (lane, warp) and
which register index holds each element. Shapes are padded to powers of two; padded positions are
masked by whoever iterates the layout. A nest over a leading part of a wider fragment may iterate the
fragment's layout itself (`within`): its linear layout then covers more than the nest's shape, and the
positions past the shape are masked the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.expr import Expr
from tilecraft.ir.nodes import ir_value
from tilecraft.layout.fragment import blocked, fragment_dims, slice_layout
from tilecraft.layout.linear import LinearLayout, log2, next_power_of_two

if TYPE_CHECKING:
    from tilecraft.backend.simt import SimtTarget


@ir_value
@dataclass(frozen=True, eq=False)
class TileLayout:
    """`linear` maps (register, lane, warp) to the tile's dims `dim0, dim1, ...` (padded)."""

    shape: tuple[int, ...]
    linear: LinearLayout

    @property
    def num_registers(self) -> int:
        return self.linear.in_size("register")

    @property
    def padded(self) -> bool:
        return any(self._covered(d) != s for d, s in enumerate(self.shape))

    def _covered(self, dim: int) -> int:
        """How far the linear layout reaches along `dim` (the padded shape, or more under `within`)."""
        return self.linear.out_size(fragment_dims(len(self.shape))[dim])

    def structural_key(self):
        return ("TileLayout", self.shape, self.linear.structural_key())

    def same_as(self, other: TileLayout) -> bool:
        return self.shape == other.shape and self.linear == other.linear

    def __repr__(self) -> str:
        return f"TileLayout(shape={self.shape}, registers={self.num_registers}, {self.linear!r})"

    def coords(self, register: Expr, lane: Expr, warp: Expr) -> list[Expr]:
        """The element (one index per dim) that `register` of thread (lane, warp) holds."""
        out = self.linear.apply_expr(register=register, lane=lane, warp=warp)
        return [out[name] for name in fragment_dims(len(self.shape))]

    def in_bounds(self, coords: list[Expr]) -> Expr | None:
        """The mask of padded positions, or None when the shape needs no padding."""
        cond = None
        for d, (c, s) in enumerate(zip(coords, self.shape)):
            if self._covered(d) != s:
                term = E.compare(E.LT, c, s)
                cond = term if cond is None else E.logical_and(cond, term)
        return cond

    def replica_mask(self) -> tuple[int, int]:
        """(lane bits, warp bits) whose basis is zero: threads differing there hold the same elements."""
        lanes = sum(1 << b for b in self.linear.free_input_bits("lane"))
        warps = sum(1 << b for b in self.linear.free_input_bits("warp"))
        return lanes, warps


def blocked_layout(
    shape: tuple[int, ...], threads: int, simt: SimtTarget, dtype: dt.DataType | None = None,
    run: int | None = None,
) -> TileLayout:
    """The free default: row-major over threads in `simt`'s thread groups; with a `dtype`, each thread
    takes runs of the innermost dim as wide as the target's widest access (`simt.vector_bytes`), or
    `run` elements where that is longer (a reduction's source), up to two accesses: a longer run saves
    shuffle levels but spreads a warp's loads over more rows."""
    vector = 1
    if dtype is not None:
        vector = max(1, simt.vector_bytes // max(1, dtype.bytes))
    if run is not None and run > vector:
        vector = min(1 << (run.bit_length() - 1), 2 * vector)
    total = 1
    for s in shape:
        total *= s
    inner = shape[-1]
    # Prefer keeping every thread busy over wider runs.
    while vector > 1 and (inner % vector or total < threads * vector):
        vector //= 2
    return TileLayout(tuple(shape), blocked(shape, threads, vector, width=simt.width))


def reduced_dim_in_registers(shape: tuple[int, ...], dim: int, threads: int, simt: SimtTarget,
                             dtype: dt.DataType) -> TileLayout | None:
    """The default of a reduction's source over an outer dim (`T.reduce_max(lse[split, row], dim=0)`):
    each thread holds the whole reduced dim of its elements, consecutive threads consecutive elements of
    the rest, so the reduction stays in registers and the result is one element a thread; None where
    the dim is longer than two of the target's widest accesses, not a power of two, or leaves threads
    idle (the blocked default then holds runs of the innermost dim)."""
    extent, total = shape[dim], math.prod(shape)
    vector = max(1, simt.vector_bytes // max(1, dtype.bytes))
    if dim == len(shape) - 1 or extent & (extent - 1) or extent > 2 * vector or total < threads * extent:
        return None
    order = [d for d in range(len(shape)) if d != dim] + [dim]  # the reduced dim innermost, then moved back
    moved = blocked(tuple(shape[d] for d in order), threads, extent, width=simt.width)
    names = fragment_dims(len(shape))
    linear = moved.rename_outs({names[p]: f"moved{order[p]}" for p in range(len(shape))})
    linear = linear.rename_outs({f"moved{d}": names[d] for d in range(len(shape))}).transpose_outs(names)
    return TileLayout(tuple(shape), linear)


def covers(outer: tuple[int, ...], inner: tuple[int, ...]) -> bool:
    """Whether a tile of shape `inner` is a leading part of one of shape `outer`, and not all of it."""
    return len(outer) == len(inner) and outer != inner and all(i <= o for o, i in zip(outer, inner))


def within(layout: TileLayout, shape: tuple[int, ...]) -> TileLayout:
    """A nest over `shape`, a leading part of the tile `layout` covers, iterating that layout: each
    thread runs the iterations whose elements it holds; the rest of the tile is masked."""
    return TileLayout(tuple(shape), layout.linear)


def block_of(layout: TileLayout, shape: tuple[int, ...]) -> TileLayout | None:
    """A nest over `shape` covering one aligned block of the tile `layout` lays out (`F[i, c + j]`, c a
    multiple of the block's power-of-two extent): the tile's layout with the registers that hold other
    blocks dropped. Every block then spreads over the threads alike, each thread holding the same
    elements of each: so a nest with this layout reads any block from its own registers. None when a
    lane or warp bit moves between blocks (which threads hold a block depends on the block)."""
    names = fragment_dims(len(shape))
    padded = [next_power_of_two(s) for s in shape]
    linear = layout.linear
    bases: dict[str, list[tuple[int, ...]]] = {}
    for name in linear.in_names:
        kept = []
        for bit in range(linear.in_bits(name)):
            vector = tuple(linear.basis(name, bit)[n] for n in names)
            inside = all(v < p for v, p in zip(vector, padded))
            if not inside and name != "register":
                return None
            if inside:
                kept.append(vector)
        bases[name] = kept
    return TileLayout(tuple(shape), LinearLayout(bases, dict(zip(names, padded))))


def widen(layout: TileLayout, shape: tuple[int, ...]) -> TileLayout:
    """The layout of a fragment of `shape` whose leading part `layout` covers: the same threads and
    registers for that part, and further registers of the same threads for the rest (so every thread,
    replicas included, holds each element it would hold of the part, and the rest with it)."""
    names = fragment_dims(len(shape))
    linear = layout.linear
    bases = {name: [tuple(linear.basis(name, b)[n] for n in names) for b in range(linear.in_bits(name))]
             for name in linear.in_names}  # fmt: skip
    padded = [next_power_of_two(s) for s in shape]
    for d, name in enumerate(names):
        for bit in range(log2(linear.out_size(name)), log2(padded[d])):
            bases.setdefault("register", []).append(
                tuple(1 << bit if k == d else 0 for k in range(len(names)))
            )
    return TileLayout(tuple(shape), LinearLayout(bases, dict(zip(names, padded))))


def project(layout: TileLayout, dim: int) -> TileLayout:
    """The layout of a reduction's result over `dim`."""
    shape = tuple(s for k, s in enumerate(layout.shape) if k != dim)
    if not shape:
        shape = (1,)
        linear = slice_layout(layout.linear, dim)
        linear = LinearLayout(
            {name: [(0,) for _ in range(linear.in_bits(name))] for name in linear.in_names}, {"dim0": 1}
        ).remove_zero_bases("register")
        return TileLayout(shape, linear)
    return TileLayout(shape, slice_layout(layout.linear, dim))


def keep_unit_dim(layout: TileLayout, dim: int) -> TileLayout:
    """`layout` with a dim of extent 1 inserted at `dim`: the result of a reduction that keeps the
    reduced dim (`project` drops it). Every element has index 0 there, so no basis reaches it."""
    lin = layout.linear
    bases = [(name, [(*v[:dim], 0, *v[dim:]) for v in vectors]) for name, vectors in lin.bases]
    sizes = [size for _, size in lin.out_dims]
    sizes.insert(dim, 1)
    shape = (*layout.shape[:dim], 1, *layout.shape[dim:])
    return TileLayout(shape, LinearLayout(bases, dict(zip(fragment_dims(len(shape)), sizes))))


def drop_unit_dim(layout: TileLayout, dim: int) -> TileLayout:
    """The inverse of `keep_unit_dim`: `layout` without its extent-1 dim `dim`."""
    return TileLayout(
        tuple(s for k, s in enumerate(layout.shape) if k != dim), slice_layout(layout.linear, dim)
    )


def subset(layout: TileLayout, dims: list[int]) -> TileLayout:
    """The layout an access `F[v_dims[0], v_dims[1], ...]` inside a nest with `layout` gives F."""
    names = fragment_dims(len(layout.shape))
    keep = [names[d] for d in dims]
    drop = [n for n in names if n not in keep]
    linear = layout.linear.project(drop).remove_zero_bases("register") if drop else layout.linear
    linear = linear.transpose_outs(keep)
    linear = linear.rename_outs(dict(zip(keep, fragment_dims(len(dims)))))
    return TileLayout(tuple(layout.shape[d] for d in dims), linear)


def shift_outs(linear: LinearLayout, shifts: list[int]) -> LinearLayout:
    """`linear` followed by `out_d >> shifts[d]` on each output dim (linear too: the low bits drop out);
    inputs that only fed dropped bits get zero bases (they now reach the same element)."""
    names = linear.out_names
    bases = {
        name: [tuple(linear.basis(name, b)[n] >> s for n, s in zip(names, shifts)) for b in range(linear.in_bits(name))]
        for name in linear.in_names
    }
    return LinearLayout(bases, {n: max(1, linear.out_size(n) >> s) for n, s in zip(names, shifts)})


def shifted(layout: TileLayout, shifts: list[int]) -> TileLayout:
    """The layout an access `F[v_0 >> s_0, v_1 >> s_1, ...]` in a nest with `layout` gives F (each
    extent a multiple of its 2^s): a thread holds each element once, however many of its iterations
    read it; threads whose iterations read the same elements hold copies."""
    linear = shift_outs(layout.linear, shifts).remove_zero_bases("register")
    return TileLayout(tuple(x >> s for x, s in zip(layout.shape, shifts)), linear)


def register_map(nest: TileLayout, dims: list[int], frag: TileLayout, shifts: list[int] | None = None) -> LinearLayout | None:
    """For a nest iterating `nest` and an access `F[v_dims...]` (or `F[v_dims[0] >> shifts[0], ...]`) to a
    fragment with layout `frag`: the map (register, lane, warp) of the nest -> register of F holding that
    element in the *same* thread, or None when some thread would need an element another thread holds.
    """
    names = fragment_dims(len(nest.shape))
    keep = [names[d] for d in dims]
    access = nest.linear.sublayout(nest.linear.in_names, keep).transpose_outs(keep)
    access = access.rename_outs(dict(zip(keep, fragment_dims(len(dims)))))
    if shifts is not None:
        access = shift_outs(access, shifts)
    access = _embed(access, frag.linear)
    if access is None:
        return None
    bases = {}
    for name in access.in_names:
        own = frag.linear.in_size(name) > 1 and name in ("lane", "warp")
        vectors = []
        for bit in range(access.in_bits(name)):
            v = access.basis(name, bit)
            if own and bit < frag.linear.in_bits(name):
                w = frag.linear.basis(name, bit)
                v = {k: v[k] ^ w[k] for k in v}
            vectors.append(tuple(v[k] for k in access.out_names))
        bases[name] = vectors
    for name in ("lane", "warp"):
        if name in frag.linear.in_names and frag.linear.in_bits(name) > access.in_bits(name):
            return None
    delta = LinearLayout(bases, access.out_dims)
    registers = frag.linear.sublayout(["register"], frag.linear.out_names)
    solve = registers.pseudo_invert()
    result = solve.compose(delta)
    if registers.compose(result) != delta:
        return None
    return result


def _embed(access: LinearLayout, frag: LinearLayout) -> LinearLayout | None:
    """`access` with `frag`'s output dims, when each of its own is the same or a leading part (a nest
    over part of a wider fragment); None when they are not comparable."""
    if tuple(access.out_dims) == tuple(frag.out_dims):
        return access
    if access.out_names != frag.out_names or any(
        access.out_size(n) > frag.out_size(n) for n in access.out_names
    ):
        return None
    bases = {
        name: [tuple(access.basis(name, b)[n] for n in access.out_names) for b in range(access.in_bits(name))]
        for name in access.in_names
    }
    return LinearLayout(bases, frag.out_dims)
