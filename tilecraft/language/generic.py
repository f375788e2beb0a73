"""`T.ir`: the generic form of printed IR, which names any registered IR class and builds it from its fields.

    T.ir.KernelCall(symbol="k", args=(A, n), grid=(4,), threads=(128,))   # a statement
    with T.ir.mybackend.Loop(stages=2):                                    # a statement with a body
        ...

The printer uses it for what the kernel language has no spelling for (the statements and values a
backend's lowering makes), so every IR prints as text that `T.parse_script` reads back. Classes are
found in tilecraft.ir.nodes; the backends are loaded when a name is not registered yet.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from tilecraft.ir import nodes
from tilecraft.ir.expr import Expr, convert
from tilecraft.ir.stmt import Stmt


class UnknownIRClass(AttributeError):
    """A `T.ir.<name>` that no registered class has."""


class WithBlock:
    """What `with <it>:` makes of its block, in a kernel (tilecraft.language.parser): `enter` and `exit`
    run around the parsing of the block, `build` makes the statement of the parsed block."""

    def enter(self) -> None:
        return None

    def exit(self) -> None:
        return None

    def build(self, body: Stmt) -> Stmt:
        raise NotImplementedError


class ScopeBlock(WithBlock):
    """`with T.ir.scope():`: the block as it is, so that an allocation or a let binding in it ends with it
    (at the end of a block of its own, the statements after it would be in its scope)."""

    def build(self, body: Stmt) -> Stmt:
        return body


@dataclass(frozen=True)
class NodeWithoutBody(WithBlock):
    """`T.ir.<Stmt class>(...)` without its one statement field: what `with ...:` completes with its block."""

    cls: type
    fields: dict[str, Any]
    body_field: str

    def build(self, body: Stmt) -> Stmt:
        return construct(self.cls, {**self.fields, self.body_field: body})


def construct(cls: type, fields: dict[str, Any]) -> Any:
    """`cls(**fields)`, each field coerced to what its annotation holds (tilecraft.ir.nodes.coerce)."""
    hints = nodes.field_types(cls)
    return cls(**{name: nodes.coerce(value, hints.get(name)) for name, value in fields.items()})


@dataclass(frozen=True)
class KeptCondition:
    """`T.ir.keep(cond)`: an `if` on `cond` stays a branch of the IR even where `cond` is a constant (an
    `if` on a constant is otherwise decided while parsing)."""

    condition: Expr


def keep(condition: Any) -> KeptCondition:
    return KeptCondition(convert(condition))


class _Constructor:
    """`T.ir.<name>`: calling it builds the class from keyword arguments."""

    def __init__(self, name: str, cls: type) -> None:
        self.name = name
        self.cls = cls

    def __call__(self, **fields: Any) -> Any:
        missing = [f for f in nodes.required_fields(self.cls) if f not in fields]
        if len(missing) == 1 and issubclass(self.cls, Stmt) and _is_statement(self.cls, missing[0]):
            return NodeWithoutBody(self.cls, fields, missing[0])
        if missing:
            raise TypeError(f"T.ir.{self.name} needs the fields {', '.join(missing)}")
        return construct(self.cls, fields)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.cls, attr)  # enum members and class constants

    def __repr__(self) -> str:
        return f"T.ir.{self.name}"


def _is_statement(cls: type, field: str) -> bool:
    hint = nodes.field_types(cls).get(field)
    return isinstance(hint, type) and issubclass(hint, Stmt)


class _Namespace:
    """`T.ir` or `T.ir.<package>`: the registered IR classes whose names start with its prefix."""

    def __init__(self, prefix: str = "") -> None:
        self._prefix = prefix
        self.__name__ = repr(self)  # what an error message calls it

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if attr == "keep" and not self._prefix:
            return keep
        if attr == "scope" and not self._prefix:
            return ScopeBlock
        name = self._prefix + attr
        cls = nodes.lookup(name)
        if cls is None and not self._known_prefix(name):
            _load_backends()
            cls = nodes.lookup(name)
        if cls is not None:
            return _Constructor(name, cls)
        if self._known_prefix(name):
            return _Namespace(name + ".")
        close = difflib.get_close_matches(name, nodes.registered_names(), n=3)
        hint = f"; did you mean {' or '.join('T.ir.' + c for c in close)}?" if close else ""
        raise UnknownIRClass(f"no IR class is registered as T.ir.{name}{hint}")

    @staticmethod
    def _known_prefix(name: str) -> bool:
        return any(n.startswith(name + ".") for n in nodes.registered_names())

    def __dir__(self) -> list[str]:
        names = [n[len(self._prefix) :] for n in nodes.registered_names() if n.startswith(self._prefix)]
        return sorted({n.split(".")[0] for n in names} | ({"keep", "scope"} if not self._prefix else set()))

    def __repr__(self) -> str:
        return f"T.ir{'.' + self._prefix.rstrip('.') if self._prefix else ''}"


def _load_backends() -> None:
    """Import every backend, so the classes they define are registered."""
    from tilecraft.backend.registry import ensure_backends

    ensure_backends()


ir = _Namespace()
