"""apply-lds-layouts: LDS tiles with an `LdsLayout` (MFMA operand tiles) are addressed through it.

After it runs, every access to such a tile uses a 1-D buffer and the element's physical offset
(`LdsLayout.physical` of its row-major offset), so the copies that fill a tile write where the MFMA
call, which reads through the same layout (its `layout_a` / `layout_b`), looks; the layout annotations
are gone. It runs after lower-buffer-views, so accesses through views already address their base.
"""

from __future__ import annotations

import dataclasses

from tilecraft.backend.pipeline import module_pass
from tilecraft.hip.lds_layout import LdsLayout
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.lowered import AtomicUpdate
from tilecraft.ir.visitor import Mutator, Visitor


class _Find(Visitor):
    def __init__(self) -> None:
        self.layouts: dict[int, LdsLayout] = {}

    def visit_AnnotateLayout(self, s: S.AnnotateLayout) -> None:
        if isinstance(s.layout, LdsLayout):
            self.layouts[id(s.buffer)] = s.layout


class _Apply(Mutator):
    def __init__(self, layouts: dict[int, LdsLayout]) -> None:
        super().__init__()
        self.layouts = layouts

    def remap_buffer(self, buf: Buffer) -> Buffer:
        if id(buf) not in self.layouts:
            return super().remap_buffer(buf)
        rows, cols = (E.const_value(d) for d in buf.shape)
        return Buffer(buf.name, (E.const(rows * cols),), buf.dtype, buf.scope, span=buf.span)

    def _physical(self, buf: Buffer, indices) -> tuple[E.Expr]:
        cols = E.const_value(buf.shape[1])
        return (self.layouts[id(buf)].physical(E.add(E.mul(indices[0], cols), indices[1])),)

    def _access(self, node):
        new = self.generic_mutate(node)  # the flat buffer, the indices' own rewrites
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
        return S.SeqStmt(()) if isinstance(s.layout, LdsLayout) else s


@module_pass("apply-lds-layouts")
def apply_lds_layouts(mod: IRModule, ctx) -> IRModule:
    """MFMA operand tiles are 1-D LDS buffers addressed at their elements' swizzled offsets."""
    out = []
    for f in mod.functions:
        find = _Find()
        find.visit(f.body)
        out.append(f.with_body(_Apply(find.layouts).mutate(f.body)) if find.layouts else f)
    return mod.with_functions(out)
