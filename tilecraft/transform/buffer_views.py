"""lower-buffer-views: every access through a view addresses its base buffer.

A view (`T.Tensor(shape, dtype, A.data)`, `T.reshape(A, shape)`, `T.view(A, shape, dtype)`: a Buffer
whose `base` is `A`) has its own shape, so the passes before this one lower tile operations on it with
that shape's edges, as for any buffer. Here, after the tile operations have become loads, stores and
backend statements, each use of a view turns into a use of its base:

- a load, store or scalar atomic of `V[i, j]` becomes one of `A`'s element at the row-major offset `o`
  of `(i, j)` in `V`'s shape (a view and its base are compact). A global `A` is addressed as
  `A[0, ..., 0, o]`: row-major addressing of that reaches exactly `o` (the form apply-layout-annotations
  gives a permuted buffer's accesses). An on-chip `A` (a shared tile or a local array) is addressed by
  `o` unravelled into its own dims, so that a layout the tile has (a swizzle applied after this pass)
  still maps each element;
- a view of another dtype reads `A`'s bytes (little-endian): a wider element is the bits of the
  elements of `A` it covers, shifted into place; a narrower one the bits of the element of `A` that
  holds it, shifted out. A store through a wider view writes each element of `A` it covers; a store or
  an atomic through a narrower view would rewrite the whole element of `A` around it, racing any thread
  that writes its neighbour, and is refused;
- any other statement that names `V` (a backend's copy or matmul call, which address a buffer by a flat
  element offset) names `A` instead: the offsets are the same (a view of another dtype is refused
  there: its offsets count other elements); a statement whose class says `keeps_views = True`
  addresses its buffers by coordinates in their own dims (a tensor-map copy) and keeps `V`, whose
  `base` then names the memory;
- the function's own loads and stores of a viewed global `A` take the form `A[0, ..., 0, o]`, so every
  access to that memory spells its offset one way and the simplifier folds `(i // 12) * 12 + i % 12`
  back to `i`. A device compiler may otherwise miss that two spellings name one element: one of the
  compilers tilecraft's tests run moved a load through `Y_flat[i]` above the store through
  `Y[i // 12, i % 12]` that it must follow (docs/language.md, "Views").

A region of a view left at this point would have to be rectangular in `A`, which it is not in general:
it is an error (a backend that keeps a tile operation whole must lower views' operands itself). Run it
before `widen-index-arithmetic`, which then computes offsets that may not fit 32 bits in 64.

Views of fragments are lowered with the fragments, by `lower-to-threads` on targets that spread them
over threads (the view's registers are its base's); `lower_tile_views` lowers the views of on-chip
buffers alone, for a pass that must see none left before later passes reorganize shared memory.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Mutator, walk

__all__ = [
    "base_indices", "copies_through_views", "lower_buffer_views", "lower_tile_views", "lower_views",
    "reinterprets_memory",
]


def reinterprets_memory(buf: Buffer) -> bool:
    """Whether `buf` is a view that reads its base's bytes as another dtype."""
    return buf.base is not None and buf.dtype != buf.base.dtype


def copies_through_views(op: S.Stmt) -> bool:
    """Whether `op` is a T.copy or T.fill that reads or writes a view of an on-chip buffer or a view of
    another dtype. SIMT targets lower those element by element (a backend's wide and bulk copies address
    a buffer in its own layout and elements, a view's elements are its base's), so no instruction's
    layout applies to their tiles."""
    if not isinstance(op, (S.Copy, S.Fill)):
        return False
    regions = (op.src, op.dst) if isinstance(op, S.Copy) else (op.dst,)
    return any(
        r.buffer.base is not None and (r.buffer.scope != "global" or reinterprets_memory(r.buffer))
        for r in regions
    )


def row_major_offset(shape, indices: tuple[E.Expr, ...]) -> E.Expr:
    """The row-major offset of the element `indices` of a compact buffer of `shape`."""
    offset: E.Expr | None = None
    for index, dim in zip(indices, shape):
        offset = index if offset is None else E.add(E.mul(offset, dim), index)
    return E.const(0) if offset is None else offset  # a 0-d buffer has the one element at offset 0


def base_indices(buf: Buffer, indices: tuple[E.Expr, ...]) -> tuple[E.Expr, ...]:
    """Indices of the memory `buf` uses (its base, or itself) that address its element `indices` as
    `(0, ..., 0, row-major offset)`; for views of the same dtype."""
    memory = buf.base if buf.base is not None else buf
    return _flat_indices(memory, row_major_offset(buf.shape, indices))


def _flat_indices(memory: Buffer, offset: E.Expr) -> tuple[E.Expr, ...]:
    zeros = tuple(E.const(0, offset.dtype) for _ in memory.shape[:-1])
    return (*zeros, offset)


def _unravel(memory: Buffer, offset: E.Expr) -> tuple[E.Expr, ...]:
    """The indices of the element at row-major `offset` in `memory`'s own dims."""
    out: list[E.Expr] = []
    for dim in reversed(memory.shape[1:]):
        out.append(E.floormod(offset, dim))
        offset = E.floordiv(offset, dim)
    return (offset, *reversed(out)) if memory.shape else ()


def _element(memory: Buffer, offset: E.Expr) -> tuple[E.Expr, ...]:
    """How an access addresses `memory`'s element at row-major `offset`."""
    return _flat_indices(memory, offset) if memory.scope == "global" else _unravel(memory, offset)


def _bits_type(d: dt.DataType) -> dt.DataType:
    return dt.as_dtype(f"uint{d.bits}")


def _bits(value: E.Expr) -> E.Expr:
    return E.call("reinterpret", value, dtype=_bits_type(value.dtype))


class _Lower(Mutator):
    def __init__(self, func: PrimFunc, target, on_chip_only: bool) -> None:
        super().__init__()
        self.target = target
        self.span = None
        self.on_chip_only = on_chip_only
        views = [b for b in walk(func.body) if isinstance(b, Buffer) and b.base is not None]
        self.viewed = {id(b.base) for b in views if b.scope == "global"}

    def _lowers(self, buf: Buffer) -> bool:
        return buf.base is not None and not (self.on_chip_only and buf.scope == "global")

    def _flat(self, buf: Buffer) -> bool:
        """Whether accesses of `buf` are rewritten: a view's, and those of a viewed global buffer."""
        return self._lowers(buf) or (not self.on_chip_only and id(buf) in self.viewed)

    def mutate(self, node):
        if isinstance(node, S.Stmt) and getattr(type(node), "keeps_views", False):
            return node
        if not (isinstance(node, S.Stmt) and node.span is not None):
            return super().mutate(node)
        saved, self.span = self.span, node.span
        try:
            return super().mutate(node)
        finally:
            self.span = saved

    def mutate_Buffer(self, buf: Buffer) -> Buffer:
        if not self._lowers(buf):
            return buf
        if reinterprets_memory(buf):
            self._fail_statement(buf)
        return buf.base

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = self.mutate(e.indices)
        buf = e.buffer
        if not self._flat(buf):
            return e if indices is e.indices else E.BufferLoad(e.dtype, buf, indices)
        if buf.base is None:
            return E.BufferLoad(e.dtype, buf, base_indices(buf, indices))
        offset = row_major_offset(buf.shape, indices)
        if not reinterprets_memory(buf):
            return E.BufferLoad(e.dtype, buf.base, _element(buf.base, offset))
        return _reinterpreted_load(buf, offset)

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        if reinterprets_memory(s.buffer) and self._lowers(s.buffer):
            return self._reinterpreted_store(s)
        return self._element(s)

    def mutate_AtomicUpdate(self, s: AtomicUpdate) -> S.Stmt:
        if reinterprets_memory(s.buffer) and self._lowers(s.buffer):
            self._fail_write(s.buffer, "an atomic update")
        return self._element(s)

    def _element(self, s: S.BufferStore | AtomicUpdate) -> S.BufferStore | AtomicUpdate:
        value, indices = self.mutate(s.value), self.mutate(s.indices)
        buf = s.buffer
        if self._flat(buf):
            memory = buf.base if buf.base is not None else buf
            offset = row_major_offset(buf.shape, indices)
            flat = _element(memory, offset) if buf.base is not None else base_indices(buf, indices)
            return dataclasses.replace(s, buffer=memory, value=value, indices=flat)
        if value is s.value and indices is s.indices:
            return s
        return dataclasses.replace(s, value=value, indices=indices)

    def _reinterpreted_store(self, s: S.BufferStore) -> S.Stmt:
        """A store through a wider view: the value's bits, one element of the base at a time."""
        view, memory = s.buffer, s.buffer.base
        if view.dtype.bits < memory.dtype.bits:
            self._fail_write(view, "a store")
        parts = view.dtype.bits // memory.dtype.bits
        offset = E.mul(row_major_offset(view.shape, self.mutate(s.indices)), parts)
        bits = E.Var(_bits_type(view.dtype), f"{view.name}_bits")
        stores = []
        for t in range(parts):
            shifted = E.int_call("shift_right", bits, E.const(t * memory.dtype.bits, bits.dtype)) if t else bits
            part = E.call("reinterpret", E.cast(shifted, _bits_type(memory.dtype)), dtype=memory.dtype)
            index = _element(memory, E.add(offset, t) if t else offset)
            stores.append(S.BufferStore(memory, part, index, span=s.span))
        return S.LetStmt(bits, _bits(self.mutate(s.value)), S.seq(*stores), span=s.span)

    def _fail_write(self, view: Buffer, what: str) -> None:
        raise LoweringError(
            f"{what} through {view.name}, a {view.dtype} view of {view.base.name} ({view.base.dtype}), would "
            f"rewrite whole {view.base.dtype} elements around the {view.dtype} one, racing the threads that "
            "write their other bytes",
            self.span,
            f"write {view.base.name} itself (or through a view of its dtype or a wider one), and read "
            f"through {view.name}",
            target=self.target,
        )

    def _fail_statement(self, view: Buffer) -> None:
        raise LoweringError(
            f"{view.name}, a {view.dtype} view of {view.base.name} ({view.base.dtype}), is an operand of an "
            "operation lowered to instructions that address memory in elements of one dtype",
            self.span,
            f"T.copy through {view.name} into a buffer of its dtype (a copy reads and writes views element "
            "by element) and use that buffer",
            target=self.target,
        )

    def mutate_BufferRegion(self, r: BufferRegion) -> BufferRegion:
        if not self._lowers(r.buffer):
            return self.generic_mutate(r)
        raise LoweringError(
            f"a region of the view {r.buffer.name} (of {r.buffer.base.name}) is still whole after the tile "
            "operations were lowered, and a region of a view is not a region of its base",
            self.span,
            f"T.copy the region into a shared buffer or fragment and use that; T.print prints "
            f"{r.buffer.base.name} itself",
            target=self.target,
        )


def _reinterpreted_load(view: Buffer, offset: E.Expr) -> E.Expr:
    """The element at `offset` of a view of another dtype, from the bits of its base's elements."""
    memory = view.base
    wide, narrow = view.dtype.bits, memory.dtype.bits
    if wide > narrow:  # the view's element covers several of the base's, lowest first
        parts = wide // narrow
        word: E.Expr | None = None
        for t in range(parts):
            first = E.mul(offset, parts)
            load = E.BufferLoad(memory.dtype, memory, _element(memory, E.add(first, t) if t else first))
            part = E.cast(_bits(load), _bits_type(view.dtype))
            if t:
                part = E.int_call("shift_left", part, E.const(t * narrow, part.dtype))
            word = part if word is None else E.int_call("bitwise_or", word, part)
        return E.call("reinterpret", word, dtype=view.dtype)
    parts = narrow // wide  # the base's element holds several of the view's
    load = E.BufferLoad(memory.dtype, memory, _element(memory, E.floordiv(offset, parts)))
    shift = E.mul(E.floormod(offset, parts), wide)
    bits = _bits(load)
    shifted = E.int_call("shift_right", bits, E.cast(shift, bits.dtype))
    return E.call("reinterpret", E.cast(shifted, _bits_type(view.dtype)), dtype=view.dtype)


def lower_views(func: PrimFunc, target=None) -> PrimFunc:
    return func.with_body(_Lower(func, target, on_chip_only=False).mutate(func.body))


def lower_tile_views(func: PrimFunc, target=None) -> PrimFunc:
    """`func` with the accesses through views of on-chip buffers (shared tiles, local arrays) lowered;
    views of global tensors are left to `lower-buffer-views`."""
    return func.with_body(_Lower(func, target, on_chip_only=True).mutate(func.body))


@module_pass("lower-buffer-views")
def lower_buffer_views(mod: IRModule, ctx) -> IRModule:
    """No view is left: loads, stores and backend statements address the views' base buffers."""
    return mod.with_functions(lower_views(f, ctx.target) for f in mod.functions)
