"""Generic traversal of IR trees: a read-only Visitor and a rebuilding Mutator.

Both dispatch on the node's class name (`visit_For`, `mutate_BufferLoad`) and fall back to a generic
walk over the dataclass fields, so adding a node kind needs no change here.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, Node, Var


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")


def children(node: Node) -> list[Any]:
    return [getattr(node, name) for name in _field_names(type(node))]


class Visitor:
    """Walks a tree; override `visit_<Class>` and call `self.generic_visit(node)` to descend."""

    def visit(self, node: Any) -> None:
        if isinstance(node, Node):
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is not None:
                method(node)
            else:
                self.generic_visit(node)
        elif isinstance(node, tuple):
            for item in node:
                self.visit(item)

    def generic_visit(self, node: Node) -> None:
        for value in children(node):
            if isinstance(value, (Node, tuple)):
                self.visit(value)


class Mutator:
    """Rebuilds a tree bottom-up; unchanged subtrees are returned as the same objects.

    Buffers are remapped once per buffer, so every use of a buffer maps to the same new buffer.
    """

    def __init__(self) -> None:
        self.buffer_map: dict[Buffer, Buffer] = {}

    def mutate(self, node: Any) -> Any:
        if isinstance(node, Node):
            method = getattr(self, "mutate_" + type(node).__name__, None)
            if method is not None:
                return method(node)
            return self.generic_mutate(node)
        if isinstance(node, tuple):
            items = tuple(self.mutate(item) for item in node)
            return node if all(a is b for a, b in zip(items, node)) else items
        return node

    def generic_mutate(self, node: Node) -> Node:
        changes = {}
        for name in _field_names(type(node)):
            old = getattr(node, name)
            if isinstance(old, (Node, tuple)):
                new = self.mutate(old)
                if new is not old:
                    changes[name] = new
        return dataclasses.replace(node, **changes) if changes else node

    def mutate_Buffer(self, buf: Buffer) -> Buffer:
        if buf not in self.buffer_map:
            self.buffer_map[buf] = self.remap_buffer(buf)
        return self.buffer_map[buf]

    def remap_buffer(self, buf: Buffer) -> Buffer:
        """Called once per buffer; by default rewrites its shape and strides, and a view's base (so a
        view keeps viewing the buffer its base became)."""
        shape = self.mutate(buf.shape)
        strides = self.mutate(buf.strides)
        base = self.mutate(buf.base)
        if shape is buf.shape and strides is buf.strides and base is buf.base:
            return buf
        return dataclasses.replace(buf, shape=shape, strides=strides, base=base)


class _VarCollector(Visitor):
    def __init__(self) -> None:
        self.vars: dict[Var, None] = {}

    def visit_Var(self, node: Var) -> None:
        self.vars.setdefault(node, None)

    def visit_Buffer(self, node: Buffer) -> None:
        self.visit(node.shape)
        self.visit(node.strides)


def free_vars(node: Any) -> tuple[Var, ...]:
    """Every Var referenced under `node`, in order of first appearance (bound ones included)."""
    collector = _VarCollector()
    collector.visit(node)
    return tuple(collector.vars)


class Substitute(Mutator):
    """Replace Vars by expressions; buffers whose shapes mention them are rebuilt consistently."""

    def __init__(self, mapping: dict[Var, Expr]) -> None:
        super().__init__()
        self.mapping = mapping

    def mutate_Var(self, node: Var) -> Expr:
        return self.mapping.get(node, node)

    def remap_buffer(self, buf: Buffer) -> Buffer:
        """As the base class, and a shape dim left without variables is folded to its value: an
        on-chip tile sized `block_q * heads` with `block_q = 128 // heads` is static once `heads` is
        given (later passes need the number, not the arithmetic)."""
        new = super().remap_buffer(buf)
        if new is buf:
            return buf
        shape = tuple(_fold_constant(d) for d in new.shape)
        if all(a is b for a, b in zip(shape, new.shape)):
            return new
        return dataclasses.replace(new, shape=shape)


def _fold_constant(dim: Expr) -> Expr:
    from tilecraft.ir.eval import evaluate
    from tilecraft.ir.expr import IntImm, const

    if isinstance(dim, IntImm) or not dim.dtype.is_integer or free_vars(dim):
        return dim
    try:
        return const(int(evaluate(dim)), dim.dtype)
    except (ValueError, ZeroDivisionError, ArithmeticError):
        return dim  # left as written: the check that needs the number reports it


def substitute(node: Any, mapping: dict[Var, Expr]) -> Any:
    if not mapping:
        return node
    return Substitute(mapping).mutate(node)


def walk(node: Any):
    """Yield every node under `node` (pre-order), buffers' shape expressions excluded."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(reversed(item))
        elif isinstance(item, Node):
            yield item
            if not isinstance(item, Buffer):
                stack.extend(reversed([c for c in children(item) if isinstance(c, (Node, tuple))]))
