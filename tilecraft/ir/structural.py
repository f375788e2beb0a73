"""Structural equality and a stable structural hash.

Both compare a canonical token stream of the tree. Vars and buffers are numbered by first occurrence,
so names do not matter (two kernels that differ only in variable names are equal), while the binding
structure does. The hash is a SHA-256 of that stream: stable across processes, usable as a cache key.

A key for what a user reads (the compile cache's) asks for the names (`map_names=False`) and the source
spans too (`spans=True`): each node's file, line and columns, and the text of each source line named,
which error messages and generated code quote.
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any

from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType
from tilecraft.ir.expr import Node, Var
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import _field_names


class _Tokenizer:
    def __init__(self, map_names: bool, spans: bool = False) -> None:
        self.map_names = map_names
        self.spans = spans
        self.ids: dict[int, int] = {}
        self.tokens: list[str] = []
        self.lines: dict[tuple[str, int], str] = {}  # the source lines the spans name, with their text

    def _span(self, node: Node) -> None:
        span = node.span
        if span is None:
            return
        self.tokens.append(f"@{span.file}:{span.line}:{span.col}:{span.end_col}")
        where = (span.file, span.line)
        if where not in self.lines:
            self.lines[where] = span.source_line()

    def _ref(self, obj: Any, kind: str) -> bool:
        """Emit a reference token; return True the first time `obj` is seen."""
        key = id(obj)
        first = key not in self.ids
        if first:
            self.ids[key] = len(self.ids)
        name = "" if self.map_names else f":{obj.name}"
        self.tokens.append(f"{kind}{self.ids[key]}{name}")
        return first

    def add(self, root: Any) -> None:
        """Append the tokens of `root`, depth first; with its own stack, so any depth is fine."""
        stack: list[Any] = [root]
        while stack:
            value = stack.pop()
            if isinstance(value, _Token):
                self.tokens.append(value)
            else:
                stack.extend(reversed(self._step(value)))

    def _step(self, value: Any) -> list[Any]:
        """Emit `value`'s own tokens; return what follows them, in order (values, and _Token literals)."""
        if isinstance(value, Var):
            if self._ref(value, "%"):
                self.tokens.append(str(value.dtype))
            return []
        if isinstance(value, Buffer):
            if not self._ref(value, "@"):
                return []
            self.tokens.extend((str(value.declared_dtype), value.scope))
            # Only views add tokens: other buffers hash as before.
            return [value.shape, value.strides] + (
                [_Token("view"), value.base] if value.base is not None else []
            )
        if isinstance(value, Node):
            self.tokens.append(type(value).__name__)
            if self.spans:
                self._span(value)
            return [getattr(value, name) for name in _field_names(type(value))] + [_Token(")")]
        if isinstance(value, (tuple, list)):
            self.tokens.append(f"[{len(value)}")
            return list(value)
        if isinstance(value, IRModule):
            self.tokens.append("IRModule")
            return [value.functions, value.attrs]
        if isinstance(value, dict):
            return [tuple(sorted(value.items(), key=lambda kv: repr(kv[0])))]
        if isinstance(value, (DataType, enum.Enum)):
            self.tokens.append(str(value))
        elif isinstance(value, float):
            self.tokens.append(repr(value))
        elif hasattr(value, "structural_key"):
            return [value.structural_key()]
        elif value is None or isinstance(value, (bool, int, str)):
            self.tokens.append(f"{type(value).__name__}:{value!r}")
        else:
            raise TypeError(f"cannot compare {type(value).__name__} structurally")
        return []


class _Token(str):
    """A literal token waiting on the tokenizer's stack (a plain str there is a value to tokenize)."""


def structural_tokens(node: Any, map_names: bool = True, spans: bool = False) -> list[str]:
    t = _Tokenizer(map_names, spans)
    t.add(node)
    for (file, line), text in sorted(t.lines.items()):
        t.tokens.append(f"line {file}:{line}={text}")
    return t.tokens


def structural_equal(a: Any, b: Any, map_names: bool = True) -> bool:
    """True when `a` and `b` have the same structure (variable and buffer names ignored by default)."""
    return structural_tokens(a, map_names) == structural_tokens(b, map_names)


def structural_hash(node: Any, map_names: bool = True, spans: bool = False) -> str:
    """A hex SHA-256 of the structure; equal for structurally equal trees in any process. With
    `map_names=False` the names of Vars and buffers count, with `spans=True` the source locations and
    the text of the lines they name."""
    return hashlib.sha256("\x1f".join(structural_tokens(node, map_names, spans)).encode()).hexdigest()
