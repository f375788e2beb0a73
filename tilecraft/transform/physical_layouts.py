"""Address shared tiles through a backend's swizzled layout: after `apply_physical_layouts(mod,
layout_type)`, every access to a buffer annotated with a layout of `layout_type` (an object with
`physical(flat)`: the element offset where the element at row-major offset `flat` of the trailing 2-D
tile is stored, and `physical_at(row, col, row_length)`: the same for the element at (row, col), which a
layout whose permutation keys on the row writes so that the row's part is loop-invariant in a loop over
columns) uses a 1-D buffer and that offset; leading dims (pipeline stages, batch) count whole tiles. The layout annotations are gone. Loads, stores and atomic updates are rewritten; copies and gemm
calls that already carry physical offsets keep them. A backend wraps it in its own named pass, for its
own layout type.
"""

from __future__ import annotations

import dataclasses

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Mutator, Visitor


class _Find(Visitor):
    def __init__(self, layout_type: type) -> None:
        self.layout_type = layout_type
        self.layouts: dict[int, object] = {}

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        if isinstance(s.layout, self.layout_type):
            self.layouts[id(s.buffer)] = s.layout


def _static(dims) -> list[int]:
    return [E.const_value(d) for d in dims]


class _Apply(Mutator):
    def __init__(self, layouts: dict[int, object], layout_type: type) -> None:
        super().__init__()
        self.layouts, self.layout_type = layouts, layout_type

    def remap_buffer(self, buf: Buffer) -> Buffer:
        if id(buf) not in self.layouts:
            return super().remap_buffer(buf)
        size = 1
        for d in _static(buf.shape):
            size *= d
        return Buffer(buf.name, (E.const(size),), buf.dtype, buf.scope, span=buf.span)

    def _physical(self, buf: Buffer, indices) -> tuple[E.Expr]:
        layout = self.layouts[id(buf)]
        dims = _static(buf.shape)
        rows, cols = dims[-2:] if len(dims) >= 2 else (1, dims[-1])
        tile = (
            layout.physical_at(indices[-2], indices[-1], cols)
            if len(dims) >= 2
            else layout.physical(indices[-1])
        )
        if len(dims) <= 2:
            return (tile,)
        lead: E.Expr = E.const(0)
        for idx, dim in zip(indices[:-2], dims[:-2]):
            lead = E.add(E.mul(lead, dim), idx)
        return (E.add(E.mul(lead, rows * cols), tile),)

    def _access(self, node):
        new = self.generic_mutate(node)  # the flat buffer, and the indices' own rewrites
        if id(node.buffer) not in self.layouts:
            return new
        return dataclasses.replace(new, indices=self._physical(node.buffer, new.indices))

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        return self._access(e)

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        return self._access(s)

    def mutate_AtomicUpdate(self, s: AtomicUpdate) -> S.Stmt:
        return self._access(s)

    def mutate_AnnotateLayout(self, s: S.AnnotateLayout) -> S.Stmt:
        return S.SeqStmt(()) if isinstance(s.layout, self.layout_type) else s


def apply_physical_layouts(mod: IRModule, layout_type: type) -> IRModule:
    """`mod` with every tile annotated with a `layout_type` layout addressed through it (module docstring)."""
    out = []
    for f in mod.functions:
        find = _Find(layout_type)
        find.visit(f.body)
        out.append(f.with_body(_Apply(find.layouts, layout_type).mutate(f.body)) if find.layouts else f)
    return mod.with_functions(out)
