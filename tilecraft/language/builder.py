"""The parse-time state that language functions consult (current kernel, pending allocations).

The parser pushes a `Builder` while it turns a kernel into IR; `T.*` functions that need context
(naming an allocation, the current thread binding, `T.empty` outputs) reach it with `current()`.
The stack is per thread, so threads can parse kernels at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.errors import ParseError
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import IRError, Var
from tilecraft.ir.span import Span

if TYPE_CHECKING:
    from tilecraft.language.parser.core import Parser


@dataclass
class KernelContext:
    block_vars: tuple[Var, ...]
    thread_vars: tuple[Var, ...]
    thread_extents: tuple[int, ...] = ()
    # T.rng_init's generator states (allocated at the top of the kernel) and the one draws use now.
    rng_states: list[Buffer] = field(default_factory=list)
    rng_current: tuple[Buffer, str] | None = None


@dataclass
class Builder:
    parser: Parser
    span: Span | None = None
    kernels: list[KernelContext] = field(default_factory=list)
    pending_allocations: list[Buffer] = field(default_factory=list)
    inits: dict[Buffer, Any] = field(default_factory=dict)  # a value to store, or stmt maker (buffer, span)
    outputs: list[Buffer] = field(default_factory=list)
    workspaces: list[Buffer] = field(default_factory=list)
    consts: list[Var] = field(default_factory=list)
    unnamed_views: list[Buffer] = field(default_factory=list)  # take the name they are assigned to
    pointer_params: list[Var] = field(default_factory=list)  # the T.ptr parameters
    reducers: dict[Buffer, str] = field(default_factory=dict)  # T.alloc_reducer buffers and their op
    reducer_epochs: dict[Buffer, Any] = field(default_factory=dict)  # open T.reducer_init epochs
    reduce_scopes: list[Any] = field(default_factory=list)  # enclosing `with T.attr(reducer, "reduce_scope")`
    # Statements an expression needs run first (T.warp_reduce_*: a thread all-reduce into a variable the
    # expression reads): the parser puts them, with the variables' allocations, before its statement.
    preludes: list[tuple[Buffer, Any]] = field(default_factory=list)
    # Rewrites of the parsed function, run in order before the parser returns it: a parse-time library
    # that builds IR across statements (TileLang's MMA emitters in tilecraft.compat lift per-thread
    # buffers to block tiles) registers one; each takes and returns a PrimFunc.
    finishers: list[Callable[[Any], Any]] = field(default_factory=list)

    def error(self, message: str, hint: str | None = None) -> ParseError:
        return ParseError(message, self.span, hint)

    def kernel(self, what: str) -> KernelContext:
        if not self.kernels:
            raise self.error(f"{what} is only valid inside `with T.Kernel(...)`")
        return self.kernels[-1]


class _Stack(threading.local):
    def __init__(self) -> None:
        self.builders: list[Builder] = []


_LOCAL = _Stack()


def current(what: str = "this call") -> Builder:
    """The active builder; raises when a kernel-only function is called outside a kernel."""
    stack = _LOCAL.builders
    if not stack:
        from tilecraft.errors import TilecraftError

        raise TilecraftError(f"{what} can only be used inside a @T.prim_func or @T.macro body")
    return stack[-1]


def active() -> Builder | None:
    stack = _LOCAL.builders
    return stack[-1] if stack else None


def push(builder: Builder) -> None:
    _LOCAL.builders.append(builder)


def pop() -> None:
    _LOCAL.builders.pop()


def current_span() -> Span | None:
    stack = _LOCAL.builders
    return stack[-1].span if stack else None


def error(message: str, hint: str | None = None) -> Exception:
    """A mistake a T.* function found: located at the call being parsed; a plain IRError outside a parse."""
    stack = _LOCAL.builders
    if not stack:
        return IRError(message if hint is None else f"{message}; {hint}")
    return stack[-1].error(message, hint)
