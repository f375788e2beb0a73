"""Where a kernel uses a 4-bit or microscaling dtype (int4, uint4, float4_e2m1fn, float6_e2m3fn,
float6_e3m2fn, float8_e8m0fnu), for the targets whose capabilities lack them to refuse it at its line
(check-target-support)."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.backend.capabilities import Lack
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType
from tilecraft.ir.function import IRModule
from tilecraft.ir.span import Span
from tilecraft.ir.visitor import Visitor

# The limit key a target that lacks them reports (and its backend declares in the manifest's `unsupported`).
NARROW_DTYPES = "dtype:4-bit-and-microscaling"


def narrow_lack(target, fix: str) -> Lack:
    """The Lack of a target whose backend does not lower these dtypes; `fix` (the backend's) says what to do
    instead."""
    return Lack(f"the {target.kind} backend does not lower 4-bit or microscaling dtypes", fix, NARROW_DTYPES)


def is_narrow(dtype: DataType) -> bool:
    """A 4-bit type (packed two a byte in global memory) or a microscaling format."""
    return dtype.is_packed or dtype.kind == "microfloat"


@dataclass(frozen=True)
class NarrowUse:
    """The first use of a narrow dtype: what uses it (a buffer, a value) and where."""

    dtype: DataType
    what: str
    span: Span | None


def first_narrow_use(mod: IRModule) -> NarrowUse | None:
    """The first buffer or value of a narrow dtype in `mod`'s functions (parameters first)."""
    for func in mod.functions:
        finder = _Finder(func.span)
        try:
            for p in func.params:
                finder.visit(p)
            finder.visit(func.body)
        except _Found as found:
            return found.use
    return None


class _Found(Exception):
    def __init__(self, use: NarrowUse) -> None:
        self.use = use


class _Finder(Visitor):
    def __init__(self, span: Span | None) -> None:
        self.span = span

    def visit(self, node) -> None:
        saved = self.span
        if isinstance(node, (S.Stmt, Buffer)) and node.span is not None:
            self.span = node.span
        if isinstance(node, Buffer) and is_narrow(node.dtype):
            raise _Found(NarrowUse(node.dtype.element(), f"buffer {node.name}", self.span))
        if isinstance(node, E.Expr) and is_narrow(node.dtype):
            raise _Found(NarrowUse(node.dtype.element(), f"a {node.dtype.element()} value", self.span))
        super().visit(node)
        self.span = saved
