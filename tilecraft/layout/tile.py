"""Tile layouts as the SIMT pipelines use them: a linear layout plus the logical shape it covers.

A `TileLayout` says, for a fragment or a `T.Parallel` nest over a tile, which thread (lane, warp) and
which register index holds each element. Shapes are padded to powers of two; padded positions are
masked by whoever iterates the layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.expr import Expr
from tilecraft.layout.fragment import blocked, fragment_dims, slice_layout
from tilecraft.layout.linear import LinearLayout, next_power_of_two

WARP = 32


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
        return any(next_power_of_two(s) != s for s in self.shape)

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
        for c, s in zip(coords, self.shape):
            if next_power_of_two(s) != s:
                term = E.compare(E.LT, c, s)
                cond = term if cond is None else E.logical_and(cond, term)
        return cond

    def replica_mask(self) -> tuple[int, int]:
        """(lane bits, warp bits) whose basis is zero: threads differing there hold the same elements."""
        lanes = sum(1 << b for b in self.linear.free_input_bits("lane"))
        warps = sum(1 << b for b in self.linear.free_input_bits("warp"))
        return lanes, warps


def blocked_layout(shape: tuple[int, ...], threads: int, dtype: dt.DataType | None = None) -> TileLayout:
    """The free default: row-major over threads, 16-byte runs of the innermost dim per thread."""
    vector = 1
    if dtype is not None:
        vector = max(1, 16 // max(1, dtype.bytes))
    total = 1
    for s in shape:
        total *= s
    inner = shape[-1]
    # Prefer keeping every thread busy over wider runs.
    while vector > 1 and (inner % vector or total < threads * vector):
        vector //= 2
    return TileLayout(tuple(shape), blocked(shape, threads, vector))


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


def subset(layout: TileLayout, dims: list[int]) -> TileLayout:
    """The layout an access `F[v_dims[0], v_dims[1], ...]` inside a nest with `layout` gives F."""
    names = fragment_dims(len(layout.shape))
    keep = [names[d] for d in dims]
    drop = [n for n in names if n not in keep]
    linear = layout.linear.project(drop).remove_zero_bases("register") if drop else layout.linear
    linear = linear.transpose_outs(keep)
    linear = linear.rename_outs(dict(zip(keep, fragment_dims(len(dims)))))
    return TileLayout(tuple(layout.shape[d] for d in dims), linear)


def register_map(nest: TileLayout, dims: list[int], frag: TileLayout) -> LinearLayout | None:
    """For a nest iterating `nest` and an access `F[v_dims...]` to a fragment with layout `frag`: the map
    (register, lane, warp) of the nest -> register of F holding that element in the *same* thread, or
    None when some thread would need an element another thread holds.
    """
    names = fragment_dims(len(nest.shape))
    keep = [names[d] for d in dims]
    access = nest.linear.sublayout(nest.linear.in_names, keep).transpose_outs(keep)
    access = access.rename_outs(dict(zip(keep, fragment_dims(len(dims)))))
    if tuple(access.out_dims) != tuple(frag.linear.out_dims):
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


def mask_of(bits) -> int:
    return sum(1 << b for b in bits)
