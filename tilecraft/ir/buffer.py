"""Buffers, ranges and buffer regions."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType, int32
from tilecraft.ir.expr import Expr, IRError, Node, node

SCOPES = ("global", "shared", "shared.dyn", "local", "local.fragment", "local.var", "shared.barrier")


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
    """`stop - start`, exact for the `start + extent` form that the printer writes, and a constant
    when the two differ by one (`A[k * 32:(k + 1) * 32]` has extent 32)."""
    if E.const_value(start) == 0:
        return stop
    if isinstance(stop, E.Add) and E.same_expr(stop.a, start):
        return stop.b
    difference = _constant_difference(stop, start)
    if difference is not None:
        return E.const(difference, stop.dtype)
    return E.sub(stop, start)


def _constant_difference(a: Expr, b: Expr) -> int | None:
    """`a - b` when both are integer expressions whose linear forms differ only in the constant."""
    if not (a.dtype.is_integer and a.dtype == b.dtype):
        return None
    (terms_a, const_a), (terms_b, const_b) = _linear(a), _linear(b)
    keys = set(terms_a) | set(terms_b)
    if any(terms_a.get(k, 0) != terms_b.get(k, 0) for k in keys):
        return None
    return const_a - const_b


def _linear(e: Expr) -> tuple[dict, int]:
    """`e` as integer coefficients of its non-linear parts (keyed by identity of vars) plus a constant."""
    if isinstance(e, E.IntImm):
        return {}, e.value
    if isinstance(e, (E.Add, E.Sub)):
        (ta, ca), (tb, cb) = _linear(e.a), _linear(e.b)
        sign = 1 if isinstance(e, E.Add) else -1
        terms = dict(ta)
        for k, v in tb.items():
            terms[k] = terms.get(k, 0) + sign * v
        return {k: v for k, v in terms.items() if v}, ca + sign * cb
    if isinstance(e, E.Mul):
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, E.IntImm):
                terms, c = _linear(x)
                return {k: v * y.value for k, v in terms.items() if v * y.value}, c * y.value
    return {E.identity_key(e): 1}, 0


@node
class Buffer(Node):
    """A multi-dimensional array in one memory scope.

    `strides` is empty for a compact row-major buffer. Buffers compare by identity: two buffers with
    equal fields are still different memory, except that a *view* (`base` set, made by
    `T.Tensor(shape, dtype, A.data)`, `T.reshape` or `T.view`) is another shape over the memory of the
    compact buffer `base`, in the same scope: its element at row-major offset `o` is `base`'s element at
    row-major offset `o`, or, where the view has another dtype, the bytes at `o` elements of its own
    dtype (tilecraft/language/views.py).

    `tf32`: declared `T.tfloat32`. The buffer holds float32 (its dtype) and is float32 to every load,
    store and copy; a T.gemm that reads it as an operand asks for TF32 math (tensor cores where the
    target has them, docs/language.md).

    `address`: a tensor made from a raw address (`T.make_tensor(ptr, shape, dtype)`): a global buffer
    that is no parameter, whose element 0 is at the address this expression holds (a `T.ptr` parameter
    or a local bound to an address read in the kernel); the targets that can address memory so print
    its accesses through it.
    """

    name: str
    shape: tuple[Expr, ...]
    dtype: DataType
    scope: str = "global"
    strides: tuple[Expr, ...] = field(default=())
    base: Buffer | None = None
    tf32: bool = False
    address: Expr | None = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise IRError(f"unknown buffer scope {self.scope!r}; valid scopes: {', '.join(SCOPES)}")
        if self.base is not None and not _can_view(self, self.base):
            raise IRError(
                f"buffer {self.name} cannot view {self.base.name}: a view and its base are compact buffers "
                "of one scope (global, shared or a fragment), of one dtype unless both are whole bytes "
                "(not a fragment's), and the base is not itself a view"
            )

    @property
    def declared_dtype(self) -> DataType:
        """The dtype as the kernel declared it: `T.tfloat32` for a tf32 buffer, else `dtype`."""
        return dt.tfloat32 if self.tf32 else self.dtype

    @property
    def data(self) -> BufferData:
        """The buffer's memory, which `T.Tensor(shape, dtype, A.data)` views with another shape."""
        return BufferData(self)

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
        indices = tuple(_index(k) for k in key)
        # A vector index (T.Ramp) loads that many elements: a vector value (tilecraft/language/packed.py).
        lanes = max(i.dtype.lanes for i in indices) if indices else 1
        return E.BufferLoad(self.dtype.with_lanes(lanes) if lanes > 1 else self.dtype, self, indices)

    def __setitem__(self, key, value) -> None:
        # The parser turns `A[i] = v` in a kernel or macro into a store; run as Python (in a plain
        # helper function a kernel calls) it would store nothing.
        raise IRError(f"buffer {self.name}: an element store (`{self.name}[...] = value`) is a statement the "
                      "parser builds, in a kernel or a @T.macro; a plain Python function runs while parsing "
                      "and cannot make one (decorate it with @T.macro)")

    def _region(self, key) -> BufferRegion:
        ranges = []
        for k, extent in zip(key, self.shape):
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    raise StridedSliceError(self.name)
                start = _index(0 if k.start is None else k.start)
                stop = extent if k.stop is None else _index(k.stop)
                ranges.append(Range(start, extent_between(start, stop)))
            else:
                ranges.append(Range(_index(k), E.const(1, _index_dtype(extent))))
        return BufferRegion(self, tuple(ranges))

    def access_ptr(self, access_mask, ptr_type="handle", content_lanes=1, offset=0, extent=None) -> Expr:
        """TVM's access pointer: the address of this thread-private array's element `offset`, for an
        extern call's pointer argument (`T.access_ptr`, tilecraft/language/extern.py)."""
        from tilecraft.language.extern import buffer_access_ptr

        return buffer_access_ptr(self, access_mask, ptr_type, content_lanes, offset, extent)

    def __repr__(self) -> str:
        shape = ", ".join(str(s) for s in self.shape)
        view = f", view of {self.base.name}" if self.base is not None else ""
        view += f", at {self.address}" if self.address is not None else ""
        return f"Buffer({self.name}, ({shape}), {self.declared_dtype}, {self.scope}{view})"


class StridedSliceError(IRError, RuntimeError):
    """A slice with a step (`A[0:10:2]`): a region is contiguous in each dim. A RuntimeError too, the class
    TileLang's parser raises (the parser locates it as a ParseRuntimeError)."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"buffer {name}: slices with a step are not supported; a region takes every element between its "
            f"bounds: loop over the elements you want (`for i in T.Parallel(n): ... {name}[start + i * step]`)"
        )


VIEW_SCOPES = ("global", "shared", "shared.dyn", "local", "local.fragment")


def _can_view(view: Buffer, base: Buffer) -> bool:
    compact = view.scope == base.scope in VIEW_SCOPES and not (view.strides or base.strides)
    return compact and base.base is None and (view.dtype == base.dtype or reinterprets(view, base))


def reinterprets(view: Buffer, base: Buffer) -> bool:
    """Whether `view` may read `base`'s bytes as its own, other dtype: scalars of whole bytes, outside
    fragments (whose elements are spread over the threads' registers one dtype at a time)."""
    return (
        base.scope != "local.fragment"
        and all(b.dtype.lanes == 1 and not b.dtype.is_packed and b.dtype.bits % 8 == 0 for b in (view, base))
    )


def element_count(shape: tuple[Expr, ...]) -> Expr:
    """The number of elements of a compact buffer of `shape`."""
    count: Expr = E.const(1, shape[0].dtype if shape else int32)
    for dim in shape:
        count = E.mul(count, dim)
    return count


def holds_more(shape: tuple[Expr, ...], than: tuple[Expr, ...]) -> bool:
    """Whether `shape` provably has more elements than `than` for every value of their symbolic dims
    (each at least 0): a view of `shape` would not fit in a buffer of shape `than`."""
    from tilecraft.ir.arith import Analyzer, Interval  # the analyzer builds on this module
    from tilecraft.ir.visitor import free_vars

    count, available = element_count(shape), element_count(than)
    ranges = {v: Interval(0, None) for v in free_vars((count, available))}
    return Analyzer(ranges).can_prove(E.compare(E.GT, count, available))


def same_size(shape: tuple[Expr, ...], than: tuple[Expr, ...]) -> bool:
    """Whether `shape` provably has as many elements as `than` for every value of their symbolic dims."""
    from tilecraft.ir.arith import Analyzer, Interval  # the analyzer builds on this module
    from tilecraft.ir.visitor import free_vars

    count, other = element_count(shape), element_count(than)
    ranges = {v: Interval(0, None) for v in free_vars((count, other))}
    return Analyzer(ranges).can_prove(E.compare(E.EQ, count, other))


@dataclass(frozen=True, eq=False)
class BufferData:
    """`A.data`: the memory of buffer `A`, as TileLang names it; only a view declaration takes it."""

    buffer: Buffer

    def __repr__(self) -> str:
        return f"{self.buffer.name}.data"


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
