"""Address swizzled shared tiles through their layout.

After it runs, every access to a shared buffer with a `SharedLayout` uses a 1-D buffer and the
element's physical offset: leading dims (pipeline stages, batch) times the tile size, plus the
permuted row-major offset within the trailing 2-D tile. Copies and gemm calls that already carry
physical offsets keep them.
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.shared_layout import SharedLayout
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator, Visitor


class _Find(Visitor):
    def __init__(self) -> None:
        self.layouts: dict[int, SharedLayout] = {}

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        if isinstance(s.layout, SharedLayout):
            self.layouts[id(s.buffer)] = s.layout


def _static(dims) -> list[int]:
    return [E.const_value(d) for d in dims]


class _Apply(Mutator):
    def __init__(self, layouts: dict[int, SharedLayout]) -> None:
        super().__init__()
        self.layouts = layouts
        self.flat: dict[int, Buffer] = {}

    def remap_buffer(self, buf: Buffer) -> Buffer:
        if id(buf) not in self.layouts:
            return buf
        size = 1
        for d in _static(buf.shape):
            size *= d
        flat = Buffer(buf.name, (E.const(size),), buf.dtype, buf.scope, span=buf.span)
        self.flat[id(flat)] = buf
        return flat

    def _physical(self, buf: Buffer, indices) -> E.Expr:
        layout = self.layouts[id(buf)]
        dims = _static(buf.shape)
        rows, cols = dims[-2:] if len(dims) >= 2 else (1, dims[-1])
        tile = E.add(E.mul(indices[-2], cols), indices[-1]) if len(dims) >= 2 else indices[-1]
        lead: E.Expr = E.const(0)
        stride = rows * cols
        for idx, dim in zip(indices[:-2], dims[:-2]):
            lead = E.add(E.mul(lead, dim), idx)
        return E.add(E.mul(lead, stride), layout.physical(tile))

    def mutate_BufferLoad(self, e: E.BufferLoad) -> E.Expr:
        indices = tuple(self.mutate(i) for i in e.indices)
        if id(e.buffer) not in self.layouts:
            return E.BufferLoad(e.dtype, e.buffer, indices)
        return E.BufferLoad(e.dtype, self.mutate_Buffer(e.buffer), (self._physical(e.buffer, indices),))

    def mutate_BufferStore(self, s: S.BufferStore) -> S.Stmt:
        value = self.mutate(s.value)
        indices = tuple(self.mutate(i) for i in s.indices)
        if id(s.buffer) not in self.layouts:
            return S.BufferStore(s.buffer, value, indices, span=s.span)
        return S.BufferStore(
            self.mutate_Buffer(s.buffer), value, (self._physical(s.buffer, indices),), span=s.span
        )

    def mutate_AnnotateLayout(self, s: S.AnnotateLayout) -> S.Stmt:
        if isinstance(s.layout, SharedLayout):
            return S.SeqStmt(())
        return s


@module_pass("apply-shared-layouts")
def apply_shared_layouts(mod: IRModule, ctx) -> IRModule:
    """Swizzled shared tiles are 1-D buffers addressed by physical offsets."""
    out = []
    for f in mod.functions:
        find = _Find()
        find.visit(f.body)
        out.append(f.with_body(_Apply(find.layouts).mutate(f.body)) if find.layouts else f)
    return mod.with_functions(out)
