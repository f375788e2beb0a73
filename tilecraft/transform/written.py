"""Which buffer parameters a kernel may write: the fact a call checks writability and copies back by.

It reads the kernel as written, before any backend pass: the common language there has a known role
for every place a buffer can appear. A buffer counts as read only where it is loaded from (`X[i]` in
an expression) or is a tile op's source (`copy` src, `gemm` A and B, `reduce` and `cumsum` src, an
`atomic_add` value region, `print`); a layout hint neither reads nor writes it. Anywhere else (a store,
a tile op's destination, a node this module does not know) counts as a write, so an unknown construct
makes a parameter "written", never silently "read-only".
"""

from __future__ import annotations

from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import AtomicValue, BufferLoad
from tilecraft.ir.function import PrimFunc
from tilecraft.ir.visitor import Visitor


def written_params(func: PrimFunc) -> tuple[bool, ...]:
    """Per parameter of `func`: True for a buffer the kernel may store into, False otherwise."""
    finder = _WriteFinder()
    finder.visit(func.body)
    return tuple(isinstance(p, Buffer) and p in finder.written for p in func.params)


def written_buffers(stmt: S.Stmt) -> set[int]:
    """The ids of the buffers `stmt` may write (every buffer it names outside a read position: stores,
    tile-op destinations, allocations, nodes this module does not know)."""
    finder = _WriteFinder()
    finder.visit(stmt)
    return {id(b) for b in finder.written} | {id(b) for b in finder.named}


class _WriteFinder(Visitor):
    """Collects every buffer that appears outside a known read position."""

    def __init__(self) -> None:
        self.written: set[Buffer] = set()
        self.named: set[Buffer] = set()  # the buffers themselves (a view as well as its base)

    def visit_Buffer(self, node: Buffer) -> None:
        self.named.add(node)
        self.written.add(node.base if node.base is not None else node)  # a view writes its base

    def read(self, value: object) -> None:
        """A read position: visit the indices or ranges, not the buffer itself."""
        if isinstance(value, BufferRegion):
            self.visit(value.ranges)
        else:
            self.visit(value)

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.visit(node.indices)

    def visit_Copy(self, node: S.Copy) -> None:
        self.read(node.src)
        self.visit(node.dst)

    def visit_Gemm(self, node: S.Gemm) -> None:
        self.read(node.a)
        self.read(node.b)
        self.visit(node.c)

    def visit_Reduce(self, node: S.Reduce) -> None:
        self.read(node.src)
        self.visit(node.dst)

    def visit_Cumsum(self, node: S.Cumsum) -> None:
        self.read(node.src)
        self.visit(node.dst)

    def visit_AtomicOp(self, node: S.AtomicOp) -> None:
        self.visit(node.dst)
        self.read(node.value)

    def visit_Print(self, node: S.Print) -> None:
        self.read(node.value)

    def visit_AtomicValue(self, node: AtomicValue) -> None:
        """An atomic load reads its element; a store or an update writes it."""
        if node.kind != "load":
            self.visit_Buffer(node.target.buffer)
        self.visit(node.target.indices)
        if node.value is not None:
            self.visit(node.value)

    def visit_AnnotateLayout(self, node: S.AnnotateLayout) -> None:
        """A hint about how a buffer is laid out: no access at all."""
