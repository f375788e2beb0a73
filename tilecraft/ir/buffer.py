"""Buffers, ranges and buffer regions."""

from __future__ import annotations

from dataclasses import field

from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType
from tilecraft.ir.expr import Expr, IRError, Node, node

SCOPES = ("global", "shared", "shared.dyn", "local", "local.fragment", "local.var")


@node
class Range(Node):
    """The half-open interval `[min, min + extent)`."""

    min: Expr
    extent: Expr

    def __repr__(self) -> str:
        return f"Range(min={self.min}, extent={self.extent})"

    @staticmethod
    def from_bounds(start, stop) -> Range:
        start, stop = E.convert(start), E.convert(stop)
        return Range(start, extent_between(start, stop))


def extent_between(start: Expr, stop: Expr) -> Expr:
    """`stop - start`, exact for the `start + extent` form that the printer writes."""
    from tilecraft.ir.structural import structural_equal

    if E.const_value(start) == 0:
        return stop
    if isinstance(stop, E.Add) and structural_equal(stop.a, start):
        return stop.b
    return E.sub(stop, start)


@node
class Buffer(Node):
    """A multi-dimensional array in one memory scope.

    `strides` is empty for a compact row-major buffer. Buffers compare by identity: two buffers with
    equal fields are still different memory.
    """

    name: str
    shape: tuple[Expr, ...]
    dtype: DataType
    scope: str = "global"
    strides: tuple[Expr, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise IRError(f"unknown buffer scope {self.scope!r}; valid scopes: {', '.join(SCOPES)}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.ndim

    def full_region(self) -> BufferRegion:
        return BufferRegion(self, tuple(Range(E.const(0, _index_dtype(s)), s) for s in self.shape))

    def __getitem__(self, key) -> Expr | BufferRegion:
        """`A[i, j]` loads an element; any slice (`A[i, :]`) makes a region."""
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != self.ndim:
            raise IRError(f"buffer {self.name} has {self.ndim} dimensions but is indexed with {len(key)}")
        if any(isinstance(k, slice) for k in key):
            return self._region(key)
        return E.BufferLoad(self.dtype, self, tuple(_index(k) for k in key))

    def _region(self, key) -> BufferRegion:
        ranges = []
        for k, extent in zip(key, self.shape):
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    raise IRError(f"buffer {self.name}: slices with a step are not supported")
                start = _index(0 if k.start is None else k.start)
                stop = extent if k.stop is None else _index(k.stop)
                ranges.append(Range(start, extent_between(start, stop)))
            else:
                ranges.append(Range(_index(k), E.const(1, _index_dtype(extent))))
        return BufferRegion(self, tuple(ranges))

    def access_ptr(self, *_args, **_kwargs):
        raise IRError("access_ptr is not part of tilecraft's language; pass the buffer or a region instead")

    def __repr__(self) -> str:
        shape = ", ".join(str(s) for s in self.shape)
        return f"Buffer({self.name}, ({shape}), {self.dtype}, {self.scope})"


def _index_dtype(e: Expr):
    return e.dtype if isinstance(e, Expr) else E.dt.int32


def _index(k) -> Expr:
    k = E.convert(k)
    if not (k.dtype.is_integer or k.dtype.is_bool):
        raise IRError(f"buffer index {k} has dtype {k.dtype}; indices must be integers")
    return k


@node
class BufferRegion(Node):
    """A rectangular part of a buffer: one Range per dimension."""

    buffer: Buffer
    ranges: tuple[Range, ...]

    def __repr__(self) -> str:
        from tilecraft.ir.printer import Printer

        return f"BufferRegion({Printer(unique_names=False).region(self)})"

    @property
    def shape(self) -> tuple[Expr, ...]:
        return tuple(r.extent for r in self.ranges)

    @property
    def dtype(self) -> DataType:
        return self.buffer.dtype
