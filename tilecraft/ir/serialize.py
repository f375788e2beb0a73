"""A JSON codec for IR expressions: plain data that cannot run code when it is read back.

Used where expressions are stored on disk (the kernel cache, exports). Vars are written once, to a
table, and referred to by index, so a Var shared by several expressions (a dynamic dim used by a
buffer's shape and listed among the function's symbolic dims) is one object again after decoding.

Decoding validates every node: an unknown node type, a wrong field type, an unknown dtype or a dangling
Var reference raises `ExprDecodeError`, never builds a half-valid expression. Only the scalar expression
nodes are supported; a `BufferLoad` has no place in stored launch metadata and is refused when encoding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType, as_dtype
from tilecraft.ir.span import Span


class ExprEncodeError(ValueError):
    """An expression holds a node that has no JSON form."""


class ExprDecodeError(ValueError):
    """JSON data is not a valid encoded expression."""


EXPR = "expr"
EXPRS = "exprs"

# Per node type, its fields after `dtype`, in constructor order, each with what its value must be.
_SCHEMA: dict[str, tuple[tuple[str, Any], ...]] = {
    "IntImm": (("value", int),),
    "FloatImm": (("value", float),),
    "StringImm": (("value", str),),
    "Not": (("a", EXPR),),
    "Select": (("condition", EXPR), ("true_value", EXPR), ("false_value", EXPR)),
    "Cast": (("value", EXPR),),
    "Call": (("op", str), ("args", EXPRS)),
    "Ramp": (("base", EXPR), ("stride", EXPR), ("lanes", int)),
    "Broadcast": (("value", EXPR), ("lanes", int)),
}
_BINARY = ("Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "TruncMod", "Min", "Max",
           "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or")  # fmt: skip
_SCHEMA.update({name: (("a", EXPR), ("b", EXPR)) for name in _BINARY})
_CLASSES: dict[str, type] = {name: getattr(E, name) for name in _SCHEMA}


def _encode_span(span: Span | None) -> list[Any] | None:
    return None if span is None else [span.file, span.line, span.col, span.end_col]


def _decode_span(data: Any) -> Span | None:
    if data is None:
        return None
    if not (isinstance(data, list) and len(data) == 4):
        raise ExprDecodeError(f"a span must be [file, line, col, end_col], got {data!r:.80}")
    file, line, col, end_col = data
    if not (
        isinstance(file, str) and _is_int(line) and _is_int(col) and (end_col is None or _is_int(end_col))
    ):
        raise ExprDecodeError(f"a span must be [str, int, int, int or null], got {data!r:.80}")
    return Span(file, line, col, end_col)


def _is_int(value: Any) -> bool:
    return type(value) is int  # bool is an int subclass; true/false are never valid here


def decode_dtype(data: Any) -> DataType:
    """The DataType spelled by `data` (a string such as 'float32' or 'int32x4')."""
    if not isinstance(data, str):
        raise ExprDecodeError(f"a dtype must be a string, got {type(data).__name__}")
    try:
        return as_dtype(data)
    except ValueError as err:
        raise ExprDecodeError(str(err)) from None


class ExprEncoder:
    """Encodes expressions; every Var met is added to `vars` and written as {"var": index}."""

    def __init__(self) -> None:
        self._index: dict[int, int] = {}
        self._vars: list[E.Var] = []

    def var_table(self) -> list[dict[str, Any]]:
        """The Vars met so far, in index order: name, dtype and span."""
        return [{"name": v.name, "dtype": str(v.dtype), "span": _encode_span(v.span)} for v in self._vars]

    def encode(self, node: E.Expr) -> Any:
        """The JSON form of `node`."""
        if isinstance(node, E.Var):
            return {"var": self._var_index(node)}
        name = type(node).__name__
        if name not in _SCHEMA or type(node) is not _CLASSES[name]:
            raise ExprEncodeError(f"{name} has no JSON form; stored expressions are scalar arithmetic only")
        out: dict[str, Any] = {"node": name, "dtype": str(node.dtype)}
        for field, kind in _SCHEMA[name]:
            value = getattr(node, field)
            out[field] = (
                self.encode(value) if kind == EXPR else self.encode_all(value) if kind == EXPRS else value
            )
        if node.span is not None:
            out["span"] = _encode_span(node.span)
        return out

    def encode_all(self, nodes: tuple[E.Expr, ...]) -> list[Any]:
        return [self.encode(n) for n in nodes]

    def _var_index(self, var: E.Var) -> int:
        if id(var) not in self._index:
            self._index[id(var)] = len(self._vars)
            self._vars.append(var)
        return self._index[id(var)]


class ExprDecoder:
    """Decodes what an `ExprEncoder` wrote, given its var table; the same index gives the same Var."""

    def __init__(self, var_table: Any) -> None:
        if not isinstance(var_table, list):
            raise ExprDecodeError(f"the var table must be a list, got {type(var_table).__name__}")
        self.vars = tuple(_decode_var(entry) for entry in var_table)

    def decode(self, data: Any) -> E.Expr:
        """The expression `data` encodes; ExprDecodeError if it is not a valid encoding."""
        if not isinstance(data, dict):
            raise ExprDecodeError(f"an expression must be an object, got {type(data).__name__}")
        if "var" in data:
            return self.var(data)
        name = data.get("node")
        if name not in _SCHEMA:
            raise ExprDecodeError(f"unknown expression node {name!r:.40}")
        expected = {"node", "dtype", "span", *(f for f, _ in _SCHEMA[name])}
        if not set(data) <= expected or not set(expected) - {"span"} <= set(data):
            raise ExprDecodeError(
                f"{name} needs the fields {sorted(expected - {'span'})}, got {sorted(data)}"
            )
        values = [self._field(name, field, kind, data[field]) for field, kind in _SCHEMA[name]]
        return _CLASSES[name](decode_dtype(data["dtype"]), *values, span=_decode_span(data.get("span")))

    def decode_all(self, data: Any) -> tuple[E.Expr, ...]:
        if not isinstance(data, list):
            raise ExprDecodeError(f"a list of expressions must be a list, got {type(data).__name__}")
        return tuple(self.decode(item) for item in data)

    def var(self, data: Any) -> E.Var:
        """The Var that {"var": index} refers to."""
        index = data.get("var") if isinstance(data, dict) and set(data) == {"var"} else None
        if not _is_int(index) or not 0 <= index < len(self.vars):
            raise ExprDecodeError(f"{data!r:.80} is not a reference into the var table of {len(self.vars)}")
        return self.vars[index]

    def _field(self, node: str, field: str, kind: Any, value: Any) -> Any:
        if kind == EXPR:
            return self.decode(value)
        if kind == EXPRS:
            return self.decode_all(value)
        checks: dict[Any, Callable[[Any], bool]] = {int: _is_int, float: lambda v: type(v) is float,
                                                     str: lambda v: isinstance(v, str)}  # fmt: skip
        if not checks[kind](value):
            raise ExprDecodeError(f"{node}.{field} must be {kind.__name__}, got {type(value).__name__}")
        return value


def _decode_var(entry: Any) -> E.Var:
    if not isinstance(entry, dict) or set(entry) != {"name", "dtype", "span"}:
        raise ExprDecodeError(f"a var table entry must have name, dtype and span, got {entry!r:.80}")
    if not isinstance(entry["name"], str) or not entry["name"]:
        raise ExprDecodeError(f"a Var name must be a non-empty string, got {entry['name']!r:.40}")
    return E.Var(decode_dtype(entry["dtype"]), entry["name"], span=_decode_span(entry["span"]))
