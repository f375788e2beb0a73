"""Generic traversal of IR trees: a read-only Visitor and a rebuilding Mutator.

Both dispatch on the node's class name (`visit_For`, `mutate_BufferLoad`) and fall back to a generic
walk over the dataclass fields, so adding a node kind needs no change here.

The generic walk keeps its own stack where the subclass leaves `visit` / `mutate` alone (it defines
handlers only), so walking an expression thousands of levels deep needs no Python stack per level; the
handlers are called in the same order, with the same results, as a recursive walk would. A subclass
that overrides `visit` or `mutate` itself (to act around every node) is walked by recursion, through
its override.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.expr import Expr, Node, Var
from tilecraft.ir.stmt import KernelLaunch, Stmt

if TYPE_CHECKING:
    from tilecraft.ir.function import IRModule


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")


def children(node: Node) -> list[Any]:
    return [getattr(node, name) for name in _field_names(type(node))]


def sub_statements(s: Stmt) -> list[Stmt]:
    """The statements directly under `s` (its bodies, and those in tuple fields), in field order."""
    out: list[Stmt] = []
    for c in children(s):
        if isinstance(c, Stmt):
            out.append(c)
        elif isinstance(c, tuple):
            out.extend(x for x in c if isinstance(x, Stmt))
    return out


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
        if type(self).visit is not Visitor.visit:
            for value in children(node):
                if isinstance(value, (Node, tuple)):
                    self.visit(value)
            return
        stack = list(reversed(children(node)))
        while stack:  # pre-order, as the recursion visits: a handler runs when its node is reached
            item = stack.pop()
            if isinstance(item, tuple):
                stack.extend(reversed(item))
            elif isinstance(item, Node):
                method = getattr(self, "visit_" + type(item).__name__, None)
                if method is not None:
                    method(item)
                else:
                    stack.extend(reversed(children(item)))


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
        if type(self).mutate is not Mutator.mutate:
            changes = {}
            for name in _field_names(type(node)):
                old = getattr(node, name)
                if isinstance(old, (Node, tuple)):
                    new = self.mutate(old)
                    if new is not old:
                        changes[name] = new
            return dataclasses.replace(node, **changes) if changes else node
        return _mutate_iteratively(self, node)

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


class BufferKeepingMutator(Mutator):
    """A Mutator that rewrites statements and expressions only: every buffer stays the object it is
    (its shape, strides and base are not walked), for passes whose rewrites never reach a buffer's
    extents and whose loads and stores must keep addressing the buffers they were given."""

    def mutate_Buffer(self, buf: Buffer) -> Buffer:
        return buf


class _Launches(BufferKeepingMutator):
    def __init__(self, rewrite: Callable[[KernelLaunch], Stmt]) -> None:
        super().__init__()
        self.rewrite = rewrite

    def mutate_KernelLaunch(self, launch: KernelLaunch) -> Stmt:
        return self.rewrite(launch)


def rewrite_launches(body: Stmt, rewrite: Callable[[KernelLaunch], Stmt]) -> Stmt:
    """`body` with each kernel launch in it replaced by `rewrite(launch)`; the code around the launches,
    and every buffer, stay as they are."""
    return _Launches(rewrite).mutate(body)


def map_launches(mod: IRModule, rewrite: Callable[[KernelLaunch], Stmt]) -> IRModule:
    """`mod` with each kernel launch of its functions replaced by `rewrite(launch)` (`rewrite_launches`)."""
    mutator = _Launches(rewrite)
    return mod.with_functions(f.with_body(mutator.mutate(f.body)) for f in mod.functions)


_NO_RESULT = object()


class _NodeFrame:
    """A node being rebuilt by the iterative generic walk: its fields, the next one, what changed."""

    __slots__ = ("node", "names", "index", "changes")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.names = _field_names(type(node))
        self.index = 0
        self.changes: dict[str, Any] = {}

    def take(self, result: Any) -> None:
        name = self.names[self.index]
        if result is not getattr(self.node, name):
            self.changes[name] = result
        self.index += 1

    def next_child(self) -> Any:
        while self.index < len(self.names):
            value = getattr(self.node, self.names[self.index])
            if isinstance(value, (Node, tuple)):
                return value
            self.index += 1
        return _NO_RESULT

    def result(self) -> Any:
        return dataclasses.replace(self.node, **self.changes) if self.changes else self.node


class _TupleFrame:
    """A tuple being rebuilt by the iterative generic walk."""

    __slots__ = ("items", "out")

    def __init__(self, items: tuple) -> None:
        self.items = items
        self.out: list[Any] = []

    def take(self, result: Any) -> None:
        self.out.append(result)

    def next_child(self) -> Any:
        return self.items[len(self.out)] if len(self.out) < len(self.items) else _NO_RESULT

    def result(self) -> Any:
        return self.items if all(a is b for a, b in zip(self.out, self.items)) else tuple(self.out)


def _mutate_iteratively(mutator: Mutator, root: Node) -> Node:
    """`Mutator.generic_mutate(root)` with an explicit stack: each child goes to its `mutate_<Class>`
    handler when there is one (which may recurse), else is rebuilt here from its own children."""
    stack: list[_NodeFrame | _TupleFrame] = [_NodeFrame(root)]
    result: Any = _NO_RESULT
    while True:
        frame = stack[-1]
        if result is not _NO_RESULT:
            frame.take(result)
            result = _NO_RESULT
        child = frame.next_child()
        if child is _NO_RESULT:
            stack.pop()
            if not stack:
                return frame.result()
            result = frame.result()
        elif isinstance(child, Node):
            method = getattr(mutator, "mutate_" + type(child).__name__, None)
            if method is not None:
                result = method(child)
            else:
                stack.append(_NodeFrame(child))
        elif isinstance(child, tuple):
            stack.append(_TupleFrame(child))
        else:
            result = child  # a plain value inside a tuple: what `mutate` returns for it


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
