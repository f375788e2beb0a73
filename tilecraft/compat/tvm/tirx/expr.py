"""TVM's `tvm.tirx.expr` (also `tvm.tir.expr`): expression node classes, standing for tilecraft's.

Each class is tilecraft's IR class for `isinstance` and annotations (`val: tirx.PrimExpr`), and calling
it with TVM's arguments builds the tilecraft expression (`IntImm("int32", 3)`, `Cast("float16", x)`,
`Select(c, a, b)`). Binary nodes simplify constants as tilecraft's arithmetic does (TVM's constructors
do not fold).
"""

from __future__ import annotations

from tilecraft.compat.tvm._mapped import refusing, stands_for
from tilecraft.ir import buffer as B
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E

MODULE = "tvm.tirx"
__all__ = [
    "Add",
    "And",
    "Broadcast",
    "Buffer",
    "BufferLoad",
    "BufferRegion",
    "Call",
    "Cast",
    "Div",
    "EQ",
    "FloatImm",
    "FloorDiv",
    "FloorMod",
    "GE",
    "GT",
    "IntImm",
    "LE",
    "LT",
    "Max",
    "Min",
    "Mod",
    "Mul",
    "NE",
    "Not",
    "Or",
    "PrimExpr",
    "Ramp",
    "Select",
    "SizeVar",
    "StringImm",
    "Sub",
    "Var",
]


def _int_imm(dtype, value) -> E.Expr:
    dtype = dt.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_bool):
        raise E.IRError(f"tvm.tirx.IntImm needs an integer or bool dtype, got {dtype}")
    if not dtype.is_bool and not E._int_fits(int(value), dtype):
        raise E.IRError(f"tvm.tirx.IntImm: {value} does not fit {dtype}")
    return E.const(int(value), dtype)


def _float_imm(dtype, value) -> E.Expr:
    dtype = dt.as_dtype(dtype)
    if not dtype.is_float:
        raise E.IRError(f"tvm.tirx.FloatImm needs a floating-point dtype, got {dtype}")
    return E.const(float(value), dtype)


def _var(name: str = "v", dtype="int32", span=None) -> E.Var:
    return E.Var(dt.as_dtype(dtype), str(name))


def _binary(fn):
    return lambda a, b, span=None: fn(a, b)


def _call(dtype, op, args, span=None) -> E.Expr:
    if not isinstance(op, str):
        raise E.IRError(
            "tvm.tirx.Call takes the intrinsic's name here (tilecraft has no TVM Op registry): "
            f"Call(dtype, 'exp', [x]), got {type(op).__name__}"
        )
    return E.call(op, *args, dtype=dtype)


PrimExpr = stands_for(MODULE, "PrimExpr", E.Expr)
Var = stands_for(MODULE, "Var", E.Var, _var)
SizeVar = stands_for(MODULE, "SizeVar", E.Var, _var)
IntImm = stands_for(MODULE, "IntImm", E.IntImm, _int_imm)
FloatImm = stands_for(MODULE, "FloatImm", E.FloatImm, _float_imm)
StringImm = stands_for(MODULE, "StringImm", E.StringImm, lambda value, span=None: E.StringImm(dt.int8, value))
Cast = stands_for(MODULE, "Cast", E.Cast, lambda dtype, value, span=None: E.cast(value, dtype))
Select = stands_for(MODULE, "Select", E.Select, lambda c, t, f, span=None: E.select(c, t, f))
Add = stands_for(MODULE, "Add", E.Add, _binary(E.add))
Sub = stands_for(MODULE, "Sub", E.Sub, _binary(E.sub))
Mul = stands_for(MODULE, "Mul", E.Mul, _binary(E.mul))
Div = stands_for(MODULE, "Div", E.Div, _binary(E.div))
FloorDiv = stands_for(MODULE, "FloorDiv", E.FloorDiv, _binary(E.floordiv))
FloorMod = stands_for(MODULE, "FloorMod", E.FloorMod, _binary(E.floormod))
Mod = stands_for(MODULE, "Mod", E.TruncMod, _binary(E.truncmod))
Min = stands_for(MODULE, "Min", E.Min, _binary(E.min_))
Max = stands_for(MODULE, "Max", E.Max, _binary(E.max_))
EQ = stands_for(MODULE, "EQ", E.EQ, _binary(lambda a, b: E.compare(E.EQ, a, b)))
NE = stands_for(MODULE, "NE", E.NE, _binary(lambda a, b: E.compare(E.NE, a, b)))
LT = stands_for(MODULE, "LT", E.LT, _binary(lambda a, b: E.compare(E.LT, a, b)))
LE = stands_for(MODULE, "LE", E.LE, _binary(lambda a, b: E.compare(E.LE, a, b)))
GT = stands_for(MODULE, "GT", E.GT, _binary(lambda a, b: E.compare(E.GT, a, b)))
GE = stands_for(MODULE, "GE", E.GE, _binary(lambda a, b: E.compare(E.GE, a, b)))
And = stands_for(MODULE, "And", E.And, _binary(E.logical_and))
Or = stands_for(MODULE, "Or", E.Or, _binary(E.logical_or))
Not = stands_for(MODULE, "Not", E.Not, lambda a, span=None: E.logical_not(a))
Call = stands_for(MODULE, "Call", E.Call, _call)
Ramp = stands_for(
    MODULE, "Ramp", E.Ramp, lambda base, stride, lanes, span=None: _language().Ramp(base, stride, lanes)
)
Broadcast = stands_for(
    MODULE, "Broadcast", E.Broadcast, lambda value, lanes, span=None: _language().Broadcast(value, lanes)
)
BufferLoad = stands_for(
    MODULE,
    "BufferLoad",
    E.BufferLoad,
    lambda buffer, indices, predicate=None, span=None: buffer[tuple(indices)],
)
Buffer = stands_for(MODULE, "Buffer", B.Buffer)
BufferRegion = stands_for(
    MODULE, "BufferRegion", B.BufferRegion, lambda buffer, region: B.BufferRegion(buffer, tuple(region))
)


def _language():
    import tilecraft.language as T

    return T


__getattr__ = refusing(f"{MODULE}.expr")
