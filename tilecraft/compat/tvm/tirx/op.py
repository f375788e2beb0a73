"""TVM's `tvm.tirx.op` (also `tvm.tir.op`, and the same functions on `tvm.tirx`): expression builders,
each mapped onto tilecraft's IR (tilecraft.ir.expr and the T.* math of tilecraft.language).

TVM's argument order is kept where it differs from T.*: `reinterpret(dtype, value)`,
`const(value, dtype)`. Math on Python numbers gives an expression here (TVM's functions always build
one), so `tirx.exp(1.0)` is a float32 `exp` call, not a Python float.
"""

from __future__ import annotations

import functools

from tilecraft.compat.tvm._mapped import refusing
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.language import math as M

MODULE = "tvm.tirx.op"
__all__ = [
    "abs",
    "all",
    "any",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "call_extern",
    "call_intrin",
    "call_pure_extern",
    "ceil",
    "const",
    "cos",
    "div",
    "erf",
    "exp",
    "exp2",
    "fabs",
    "floor",
    "floordiv",
    "floormod",
    "if_then_else",
    "indexdiv",
    "indexmod",
    "infinity",
    "log",
    "log2",
    "max",
    "max_value",
    "min",
    "min_value",
    "pow",
    "power",
    "reinterpret",
    "round",
    "rsqrt",
    "shift_left",
    "shift_right",
    "sigmoid",
    "sin",
    "sqrt",
    "tanh",
    "truncdiv",
    "truncmod",
]


def const(value, dtype=None, span=None) -> E.Expr:
    """TVM's `tirx.const(value, dtype)`: int32 for a Python int, float32 for a float, bool for a bool
    when no dtype is given."""
    if isinstance(value, E.Expr):
        return value if dtype is None else E.cast(value, dtype)
    return E.const(value, dtype)


def reinterpret(dtype, value, span=None) -> E.Expr:
    """The bits of `value` read as `dtype` (TVM's order: dtype first)."""
    return M.reinterpret(value, dtype)


def _as_expr(fn):
    """A T.* math function that also builds an expression from a Python number, as TVM's do."""

    @functools.wraps(fn)
    def build(*args, span=None, **kwargs):
        args = tuple(
            E.convert(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else a for a in args
        )
        return fn(*args, **kwargs)

    return build


exp = _as_expr(M.exp)
exp2 = _as_expr(M.exp2)
log = _as_expr(M.log)
log2 = _as_expr(M.log2)
sqrt = _as_expr(M.sqrt)
rsqrt = _as_expr(M.rsqrt)
tanh = _as_expr(M.tanh)
sigmoid = _as_expr(M.sigmoid)
erf = _as_expr(M.erf)
floor = _as_expr(M.floor)
ceil = _as_expr(M.ceil)
round = _as_expr(M.round)  # noqa: A001 - TVM's name
sin = _as_expr(M.sin)
cos = _as_expr(M.cos)
pow = _as_expr(M.pow)  # noqa: A001 - TVM's name
power = pow
abs = _as_expr(M.abs)  # noqa: A001 - TVM's name
fabs = abs


def _binary(fn):
    return lambda a, b, span=None: fn(E.convert(a) if not isinstance(a, E.Expr) else a, b)


floordiv = _binary(E.floordiv)
floormod = _binary(E.floormod)
truncdiv = _binary(E.truncdiv)
truncmod = _binary(E.truncmod)
indexdiv = floordiv
indexmod = floormod
div = _binary(E.div)
min = _binary(E.min_)  # noqa: A001 - TVM's name
max = _binary(E.max_)  # noqa: A001 - TVM's name
bitwise_and = _binary(lambda a, b: E.int_call("bitwise_and", a, b))
bitwise_or = _binary(lambda a, b: E.int_call("bitwise_or", a, b))
bitwise_xor = _binary(lambda a, b: E.int_call("bitwise_xor", a, b))
shift_left = _binary(lambda a, b: E.int_call("shift_left", a, b))
shift_right = _binary(lambda a, b: E.int_call("shift_right", a, b))


def bitwise_not(a, span=None) -> E.Expr:
    return ~E.convert(a)


def if_then_else(cond, t, f, span=None) -> E.Expr:
    """`t` where `cond` holds, else `f`."""
    return E.select(cond, t, f)


def all(*args, span=None) -> E.Expr:  # noqa: A001 - TVM's name
    """The conjunction of one or more boolean expressions."""
    if not args:
        raise E.IRError("tvm.tirx.all takes at least one condition")
    return functools.reduce(E.logical_and, args)


def any(*args, span=None) -> E.Expr:  # noqa: A001 - TVM's name
    """The disjunction of one or more boolean expressions."""
    if not args:
        raise E.IRError("tvm.tirx.any takes at least one condition")
    return functools.reduce(E.logical_or, args)


def max_value(dtype, span=None) -> E.Expr:
    return M.max_value(dtype)


def min_value(dtype, span=None) -> E.Expr:
    return M.min_value(dtype)


def infinity(dtype, span=None) -> E.Expr:
    return M.infinity(dtype)


def call_intrin(dtype, op_name, *args, span=None) -> E.Expr:
    """A call of a backend intrinsic by name (`T.call_intrin`); TVM's Op objects are not available."""
    if not isinstance(op_name, str):
        raise E.IRError(f"tvm.tirx.call_intrin takes the intrinsic's name, got {type(op_name).__name__}")
    return M.call_intrin(dt.as_dtype(dtype), op_name.removeprefix("tirx.").removeprefix("tir."), *args)


__getattr__ = refusing(MODULE)


def call_extern(dtype, func_name, *args, span=None) -> E.Expr:
    """TVM's `call_extern(dtype, func_name, *args)`: `T.call_extern` (a function the kernel's
    `T.import_source` text or the toolchain provides)."""
    from tilecraft.language.extern import call_extern as extern

    return extern(dtype, func_name, *args)


call_pure_extern = call_extern
