"""The parse-time state that language functions consult (current kernel, pending allocations).

The parser pushes a `Builder` while it turns a kernel into IR; `T.*` functions that need context
(naming an allocation, the current thread binding, `T.empty` outputs) reach it with `current()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tilecraft.errors import ParseError
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, IRError, Var
from tilecraft.ir.span import Span

if TYPE_CHECKING:
    from tilecraft.language.parser.core import Parser


@dataclass
class KernelContext:
    block_vars: tuple[Var, ...]
    thread_vars: tuple[Var, ...]
    thread_extents: tuple[int, ...] = ()


@dataclass
class Builder:
    parser: Parser
    span: Span | None = None
    kernels: list[KernelContext] = field(default_factory=list)
    pending_allocations: list[Buffer] = field(default_factory=list)
    inits: dict[Buffer, Expr] = field(default_factory=dict)
    outputs: list[Buffer] = field(default_factory=list)
    consts: list[Var] = field(default_factory=list)

    def error(self, message: str, hint: str | None = None) -> ParseError:
        return ParseError(message, self.span, hint)

    def kernel(self, what: str) -> KernelContext:
        if not self.kernels:
            raise self.error(f"{what} is only valid inside `with T.Kernel(...)`")
        return self.kernels[-1]


_STACK: list[Builder] = []


def current(what: str = "this call") -> Builder:
    """The active builder; raises when a kernel-only function is called outside a kernel."""
    if not _STACK:
        from tilecraft.errors import TilecraftError

        raise TilecraftError(f"{what} can only be used inside a @T.prim_func or @T.macro body")
    return _STACK[-1]


def active() -> Builder | None:
    return _STACK[-1] if _STACK else None


def push(builder: Builder) -> None:
    _STACK.append(builder)


def pop() -> None:
    _STACK.pop()


def current_span() -> Span | None:
    return _STACK[-1].span if _STACK else None


def error(message: str, hint: str | None = None) -> Exception:
    """A mistake a T.* function found: located at the call being parsed; a plain IRError outside a parse."""
    if not _STACK:
        return IRError(message if hint is None else f"{message}; {hint}")
    return _STACK[-1].error(message, hint)
