"""Where a kernel uses a 4-bit or microscaling dtype (int4, uint4, float4_e2m1fn, float6_e2m3fn,
float6_e3m2fn, float8_e8m0fnu), for the backends that do not lower them to refuse it at its line."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.errors import LoweringError
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType
from tilecraft.ir.function import IRModule
from tilecraft.ir.span import Span
from tilecraft.ir.visitor import Visitor

# The limit key a backend that refuses them reports (and declares in its manifest's `unsupported`).
NARROW_DTYPES = "dtype:4-bit-and-microscaling"


def is_narrow(dtype: DataType) -> bool:
    """A 4-bit type (packed two a byte in global memory) or a microscaling format."""
    return dtype.is_packed or dtype.kind == "microfloat"


@dataclass(frozen=True)
class NarrowUse:
    """The first use of a narrow dtype: what uses it (a buffer, a value) and where."""

    dtype: DataType
    what: str
    span: Span | None


def refuse_narrow_dtypes(mod: IRModule, target, hint: str) -> None:
    """Raise a LoweringError (limit NARROW_DTYPES) at the first use of a narrow dtype in `mod`; `hint`
    (the backend's) says what to do instead."""
    use = first_narrow_use(mod)
    if use is not None:
        raise LoweringError(
            f"{use.what} is {use.dtype}: the {target.kind} backend does not lower 4-bit or microscaling dtypes",
            use.span, hint, target=target, unsupported=NARROW_DTYPES,
        )  # fmt: skip


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
