"""`T.let(v, value)`: TVMScript's binding of a variable made by calling a dtype without a value
(`v = T.int32()`) to a value, for the rest of the block it is written in."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.ir import expr as E
from tilecraft.ir.expr import Expr, IRError, Var
from tilecraft.ir.visitor import substitute


@dataclass(frozen=True)
class LetBinding:
    """What `T.let(v, value)` gives the parser: `v` stands for `value` in the statements after it."""

    var: Var
    value: Expr


def let(v: Var, value, body=None) -> LetBinding | Expr:
    """Bind `v` to `value` for the rest of the block; with `body`, the expression `body` with `v` bound
    to `value` (TVM's Let expression)."""
    if not isinstance(v, Var):
        raise IRError(f"T.let binds a variable (v = T.int32(), then T.let(v, value)), got {type(v).__name__}")
    value = E.cast(E.convert(value), v.dtype)
    if body is not None:
        return substitute(E.convert(body), {v: value})
    return LetBinding(v, value)
