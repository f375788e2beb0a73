"""Grid expressions -> Python source, so a launch computes its grid with plain integer arithmetic.

A kernel's grid is a tuple of IR expressions over the function's scalar parameters and symbolic dims.
`GridScope` names each of those variables as a local of the generated launcher; `python_source`
translates an integer expression with the semantics of `tilecraft.ir.eval`: `//` and `%` floor, `Div`
and `TruncMod` truncate toward zero (C), `Min`/`Max`, comparisons, logic and `Select`. Anything else
(float arithmetic, intrinsics, narrowing casts) falls back to `tilecraft.ir.eval.evaluate`, so every
grid the IR can express still launches. Integer wrap-around at the dtype's width is not modelled: grid
sizes are far below 2**31 and are range-checked before the launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tilecraft.errors import TilecraftError
from tilecraft.ir import expr as E
from tilecraft.ir.eval import evaluate
from tilecraft.ir.visitor import free_vars

_ARITH = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%"}
_CALLS = {E.Div: "_tdiv", E.TruncMod: "_tmod", E.Min: "min", E.Max: "max"}
_COMPARE = {E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">="}
_LOGIC = {E.And: "and", E.Or: "or"}


class _Fallback(Exception):
    """The expression needs the interpreter."""


def trunc_div(a: int, b: int) -> int:
    """C's integer `/`: the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trunc_mod(a: int, b: int) -> int:
    """C's integer `%`: the remainder of truncating division (sign of the dividend)."""
    return a - b * trunc_div(a, b)


@dataclass
class GridScope:
    """The launcher's locals that grid expressions may read: Var -> local name (by identity or name),
    plus the constants (IR nodes) that interpreter fallbacks reference."""

    by_id: dict[int, str] = field(default_factory=dict)
    by_name: dict[str, str] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)

    def bind(self, var_or_name: E.Var | str, local: str) -> None:
        if isinstance(var_or_name, E.Var):
            self.by_id[id(var_or_name)] = local
            self.by_name.setdefault(var_or_name.name, local)
        else:
            self.by_name.setdefault(var_or_name, local)

    def local(self, var: E.Var, where: str) -> str:
        found = self.by_id.get(id(var)) or self.by_name.get(var.name)
        if found is None:
            known = ", ".join(sorted(self.by_name)) or "none"
            raise TilecraftError(
                f"{where} uses {var.name!r}, which is neither a scalar parameter nor a symbolic dim of the "
                f"function (known: {known})"
            )
        return found

    def constant(self, value: Any) -> str:
        name = f"_c{len(self.constants)}"
        self.constants[name] = value
        return name


def python_source(e: E.Expr | int, scope: GridScope, where: str) -> str:
    """Python source computing the int value of `e` (see the module docstring for the semantics); a
    plain int stands for itself."""
    if isinstance(e, int):
        return f"({int(e)})"
    try:
        return _translate(e, scope, where)
    except _Fallback:
        return _interpreted(e, scope, where)


def _interpreted(e: E.Expr, scope: GridScope, where: str) -> str:
    env = ", ".join(f"{scope.constant(v)}: {scope.local(v, where)}" for v in free_vars(e))
    return f"int(_evaluate({scope.constant(e)}, {{{env}}}))"


def _translate(e: E.Expr, scope: GridScope, where: str) -> str:
    kind = type(e)
    if kind is E.IntImm:
        return repr(bool(e.value)) if e.dtype.is_bool else f"({e.value})"
    if kind is E.Var:
        if not (e.dtype.is_integer or e.dtype.is_bool):
            raise _Fallback
        return scope.local(e, where)
    if kind in _COMPARE:
        _integer_operands(e)
        return f"({_translate(e.a, scope, where)} {_COMPARE[kind]} {_translate(e.b, scope, where)})"
    if kind in _LOGIC:
        return f"(bool({_translate(e.a, scope, where)}) {_LOGIC[kind]} bool({_translate(e.b, scope, where)}))"
    if kind is E.Not:
        return f"(not {_translate(e.a, scope, where)})"
    if kind is E.Select:
        cond, yes, no = (_translate(x, scope, where) for x in (e.condition, e.true_value, e.false_value))
        return f"({yes} if {cond} else {no})"
    if not e.dtype.is_integer:
        raise _Fallback
    if kind in _ARITH:
        return f"({_translate(e.a, scope, where)} {_ARITH[kind]} {_translate(e.b, scope, where)})"
    if kind in _CALLS:
        return f"{_CALLS[kind]}({_translate(e.a, scope, where)}, {_translate(e.b, scope, where)})"
    if kind is E.Cast and preserves_value(e.value.dtype, e.dtype):
        return _translate(e.value, scope, where)
    raise _Fallback


def _integer_operands(e: E.BinaryOp) -> None:
    if not all(x.dtype.is_integer or x.dtype.is_bool for x in (e.a, e.b)):
        raise _Fallback


def preserves_value(src: Any, dst: Any) -> bool:
    """Whether every value of integer type `src` is unchanged by a cast to integer type `dst`."""
    if not (src.is_integer or src.is_bool) or not dst.is_integer:
        return False
    if src.is_bool:
        return True
    if src.kind == dst.kind:
        return dst.bits >= src.bits
    return dst.kind == "int" and dst.bits > src.bits


GRID_HELPERS: dict[str, Any] = {"_tdiv": trunc_div, "_tmod": trunc_mod, "_evaluate": evaluate}


def grid_function(
    grid: Sequence[E.Expr], scalars: Sequence[str], dims: Sequence[E.Var]
) -> Callable[[Sequence[Any], Sequence[int]], tuple[int, ...]]:
    """`f(scalar_values, dim_values) -> grid` for one grid; what the launcher inlines, for tests and tools.

    `scalars` names the scalar parameters in the order their values are given.
    """
    scope = GridScope()
    for i, name in enumerate(scalars):
        scope.bind(name, f"s{i}")
    for j, var in enumerate(dims):
        scope.bind(var, f"d{j}")
    parts = [python_source(e, scope, "grid") for e in grid]
    unpack_s = "".join(f"s{i}, " for i in range(len(scalars)))
    unpack_d = "".join(f"d{j}, " for j in range(len(dims)))
    source = (
        "def grid(scalars, dims):\n"
        + (f"    {unpack_s}= scalars\n" if scalars else "")
        + (f"    {unpack_d}= dims\n" if dims else "")
        + f"    return ({', '.join(parts)},)\n"
    )
    namespace = {**GRID_HELPERS, **scope.constants}
    exec(compile(source, "<tilecraft grid>", "exec"), namespace)  # noqa: S102 - our own generated source
    fn = namespace["grid"]
    fn.__source__ = source
    return fn
