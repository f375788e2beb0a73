"""lower-buffer-views: every access through a view addresses its base buffer.

A view (`T.Tensor(shape, dtype, A.data)`, a Buffer whose `base` is `A`) has its own shape, so the passes
before this one lower tile operations on it with that shape's edges, as for any global tensor. Here,
after the tile operations have become loads, stores and backend statements, each use of a view turns
into a use of its base:

- a load, store or scalar atomic of `V[i, j]` becomes one of `A[0, ..., 0, o]`, `o` the row-major offset
  of `(i, j)` in `V`'s shape. A view and its base are compact (row-major, no strides), so `o` is also
  the offset in `A`, and row-major addressing of `A[0, ..., 0, o]` reaches exactly it (the form
  apply-layout-annotations gives a permuted buffer's accesses);
- any other statement that names `V` (a backend's copy or matmul call, which address a buffer by a flat
  element offset) names `A` instead: the offsets are the same; a statement whose class says
  `keeps_views = True` addresses its buffers by coordinates in their own dims (a tensor-map copy) and
  keeps `V`, whose `base` then names the memory;
- the function's own loads and stores of `A` take the same form, `A[0, ..., 0, o]`, so every access to
  that memory spells its offset one way and the simplifier folds `(i // 12) * 12 + i % 12` back to `i`.
  A device compiler may otherwise miss that two spellings name one element: one of the compilers
  tilecraft's tests run moved a load through `Y_flat[i]` above the store through `Y[i // 12, i % 12]`
  that it must follow (docs/language.md, "Views").

A region of a view left at this point would have to be rectangular in `A`, which it is not in general:
it is an error (a backend that keeps a tile operation whole must lower views' operands itself). Run it
before `widen-index-arithmetic`, which then computes offsets that may not fit 32 bits in 64.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Mutator, walk

__all__ = ["base_indices", "lower_buffer_views", "lower_views"]


def base_indices(buf: Buffer, indices: tuple[E.Expr, ...]) -> tuple[E.Expr, ...]:
    """Indices of the memory `buf` uses (its base, or itself) that address its element `indices` as
    `(0, ..., 0, row-major offset)`."""
    offset: E.Expr | None = None
    for index, dim in zip(indices, buf.shape):
        offset = index if offset is None else E.add(E.mul(offset, dim), index)
    if offset is None:  # a 0-d buffer has the one element at offset 0
        offset = E.const(0)
    memory = buf.base if buf.base is not None else buf
    zeros = tuple(E.const(0, offset.dtype) for _ in memory.shape[:-1])
    return (*zeros, offset)


class _Lower(Mutator):
    def __init__(self, func: PrimFunc, target) -> None:
        super().__init__()
        self.target = target
        self.span = None
        self.viewed = {id(b.base) for b in walk(func.body) if isinstance(b, Buffer) and b.base is not None}

    def _flat(self, buf: Buffer) -> bool:
        """Whether accesses of `buf` are rewritten to flat ones: a view's, and those of a viewed buffer."""
        return buf.base is not None or id(buf) in self.viewed

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
        return buf.base if buf.base is not None else buf

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = self.mutate(e.indices)
        if self._flat(e.buffer):
            return E.BufferLoad(e.dtype, self.mutate(e.buffer), base_indices(e.buffer, indices))
        return e if indices is e.indices else E.BufferLoad(e.dtype, e.buffer, indices)

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        return self._element(s)

    def mutate_AtomicUpdate(self, s: AtomicUpdate) -> S.Stmt:
        return self._element(s)

    def _element(self, s: S.BufferStore | AtomicUpdate) -> S.BufferStore | AtomicUpdate:
        value, indices = self.mutate(s.value), self.mutate(s.indices)
        if self._flat(s.buffer):
            memory, flat = self.mutate(s.buffer), base_indices(s.buffer, indices)
            return dataclasses.replace(s, buffer=memory, value=value, indices=flat)
        if value is s.value and indices is s.indices:
            return s
        return dataclasses.replace(s, value=value, indices=indices)

    def mutate_BufferRegion(self, r: BufferRegion) -> BufferRegion:
        if r.buffer.base is None:
            return self.generic_mutate(r)
        raise LoweringError(
            f"a region of the view {r.buffer.name} (of {r.buffer.base.name}) is still whole after the tile "
            "operations were lowered, and a region of a view is not a region of its base",
            self.span,
            f"T.copy the region into a shared buffer or fragment and use that; T.print prints "
            f"{r.buffer.base.name} itself",
            target=self.target,
        )


def lower_views(func: PrimFunc, target=None) -> PrimFunc:
    return func.with_body(_Lower(func, target).mutate(func.body))


@module_pass("lower-buffer-views")
def lower_buffer_views(mod: IRModule, ctx) -> IRModule:
    """No view is left: loads, stores and backend statements address the views' base buffers."""
    return mod.with_functions(lower_views(f, ctx.target) for f in mod.functions)
