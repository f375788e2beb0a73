"""Scalar math and constructors: `T.exp`, `T.max`, `T.ceildiv`, `T.cast`, `T.if_then_else` ..."""

from __future__ import annotations

import builtins
import math as pymath
from typing import Any

import numpy as np

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.expr import Expr, IRError, convert

_PY = (bool, int, float)


def _float_arg(name: str, x) -> Expr:
    x = convert(x)
    if not x.dtype.is_float:
        raise IRError(
            f"T.{name} needs a floating-point argument, got {x.dtype}; cast first: T.cast(x, 'float32')"
        )
    return x


def _sigmoid(x: np.float64) -> np.float64:
    return 1.0 / (1.0 + np.exp(-x))


# Math on Python numbers is done now, in double precision, and gives a Python float: like any Python
# number in a kernel it then takes the dtype of what it meets, so `A[i] * T.exp(1.0)` is as precise as A.
_ON_NUMBERS = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "tanh": np.tanh, "sigmoid": _sigmoid,
    "erf": lambda x: pymath.erf(x), "floor": np.floor, "ceil": np.ceil, "round": np.rint, "sin": np.sin,
    "cos": np.cos,
}  # fmt: skip


def _on_number(name: str, *xs: float) -> float:
    with np.errstate(all="ignore"):  # NaN and infinities, as the device functions give them
        return float(_ON_NUMBERS[name](*(np.float64(x) for x in xs)))


def _unary(name: str):
    def fn(x) -> Expr | float:
        if _is_number(x):
            return _on_number(name, x)
        return E.call(name, _float_arg(name, x))

    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} of a floating-point scalar (a Python float for a Python number)."
    return fn


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001 - TileLang's name
sin = _unary("sin")
cos = _unary("cos")


_ON_NUMBERS["pow"] = np.power


def pow(x, y) -> Expr | float:  # noqa: A001
    """`x ** y` for floating-point values (a Python float for Python numbers)."""
    if _is_number(x) and _is_number(y):
        return _on_number("pow", x, y)
    x, y = E.match_types(x, y)
    return E.call("pow", _float_arg("pow", x), y)


def abs(x):  # noqa: A001
    """Absolute value (integers and floats)."""
    if isinstance(x, _PY):
        return builtins.abs(x)
    return E.call("abs", x)


def _all_py(*xs) -> bool:
    return all(isinstance(x, _PY) for x in xs)


def _extremum(name: str, xs: tuple, python, ir) -> Any:
    if len(xs) < 2:
        raise IRError(f"T.{name} takes at least two values; for a tile use T.reduce_{name}")
    if _all_py(*xs):
        return python(xs)
    result = xs[0]
    for x in xs[1:]:
        result = _in_compute_type(ir, result, x)
    return result


def _in_compute_type(ir, a, b) -> Expr:
    """`ir(a, b)` (a maximum or minimum); operands of a storage format (float8, 4-bit integers) are
    compared in the type they compute in and the result cast back, which is exact: it is one of them."""
    a, b = E.match_types(a, b)
    dtype = a.dtype
    if not dtype.is_storage_only:
        return ir(a, b)
    compute = dt.float32 if dtype.is_float else dt.int32
    return E.cast(ir(E.cast(a, compute), E.cast(b, compute)), dtype)


def _python_extremum(pick):
    """NumPy's maximum or minimum of Python numbers: NaN as soon as one is NaN (builtins.max and min
    depend on where it is)."""
    return lambda xs: next((x for x in xs if x != x), None) or pick(xs)


def max(*xs):  # noqa: A001
    """Maximum of two or more values (a Python number when all are Python numbers); a NaN gives NaN.
    Values of a storage format (float8) are compared in float32, their maximum of their dtype."""
    return _extremum("max", xs, _python_extremum(builtins.max), E.max_)


def min(*xs):  # noqa: A001
    """Minimum of two or more values (a Python number when all are Python numbers); a NaN gives NaN.
    Values of a storage format (float8) are compared in float32, their minimum of their dtype."""
    return _extremum("min", xs, _python_extremum(builtins.min), E.min_)


def _py_divisor(name: str, b) -> None:
    """Python's own error for `5 // 0` names no T.* function; this one does."""
    if b == 0:
        raise IRError(f"T.{name}: division by zero (the divisor is the Python value {b!r})")


def ceildiv(a, b):
    """`(a + b - 1) // b` for integers."""
    if _all_py(a, b):
        _py_divisor("ceildiv", b)
        return -(-a // b)
    return E.floordiv(E.add(a, E.sub(b, 1)), b)


def floordiv(a, b):
    if _all_py(a, b):
        _py_divisor("floordiv", b)
        return a // b
    return E.floordiv(a, b)


def floormod(a, b):
    if _all_py(a, b):
        _py_divisor("floormod", b)
        return a % b
    return E.floormod(a, b)


def truncdiv(a, b):
    if _all_py(a, b):
        _py_divisor("truncdiv", b)
        return int(a / b)
    return E.truncdiv(a, b)


def truncmod(a, b):
    if _all_py(a, b):
        _py_divisor("truncmod", b)
        return int(pymath.fmod(a, b))
    return E.truncmod(a, b)


def cast(value, dtype) -> Expr:
    """`value` converted to `dtype`."""
    return E.cast(value, dtype)


def Cast(dtype, value) -> Expr:  # noqa: N802 - TVM's spelling, argument order
    return E.cast(value, dtype)


def reinterpret(value, dtype) -> Expr:
    """The bits of `value` read as `dtype`, of the same width: `T.reinterpret(x, "uint32")` of a float32
    is its IEEE-754 bit pattern (TileLang's order; the old `T.reinterpret(dtype, value)` is accepted)."""
    if isinstance(value, (str, dt.DataType)) and not isinstance(dtype, (str, dt.DataType)):
        value, dtype = dtype, value
    if dtype == "handle":  # TVM's opaque pointer (the null value of a reduce scope's T.attr)
        from tilecraft.language.reducers import Handle

        return Handle(convert(value))
    value, dtype = convert(value), dt.as_dtype(dtype)
    if value.dtype.bits != dtype.bits or value.dtype.lanes != dtype.lanes:
        raise IRError(
            f"T.reinterpret: {value.dtype} has {value.dtype.bits} bits and {dtype} has {dtype.bits}; "
            "reinterpret keeps the bits, so both must have the same width (use T.cast to convert a value)"
        )
    if value.dtype == dtype:
        return value
    if isinstance(value, (E.IntImm, E.FloatImm)) and not dtype.is_bool:
        bits = np.array(E.const_value(value), dt.numpy_dtype(value.dtype)).view(dt.numpy_dtype(dtype))
        return E.const(bits.item(), dtype)
    return E.call("reinterpret", value, dtype=dtype)


def if_then_else(cond, then_value, else_value):
    """`then_value` where `cond` holds, else `else_value` (a Select: both values may be evaluated)."""
    if isinstance(cond, _PY):
        return then_value if cond else else_value
    return E.select(cond, then_value, else_value)


def Select(cond, true_value, false_value):  # noqa: N802
    """TVM's `T.Select(cond, true_value, false_value)`: `T.if_then_else` (both values may be evaluated)."""
    return if_then_else(cond, true_value, false_value)


def align_up(x, align):
    """`x` rounded up to a multiple of `align` (`T.ceildiv(x, align) * align`)."""
    if _all_py(x, align):
        return ceildiv(x, align) * align
    return E.mul(ceildiv(x, align), align)


def any_of(region) -> Expr:
    """Whether some element of a buffer or region (static extents) is true (nonzero)."""
    return _fold_elements("any_of", region, E.logical_or)


def all_of(region) -> Expr:
    """Whether every element of a buffer or region (static extents) is true (nonzero)."""
    return _fold_elements("all_of", region, E.logical_and)


MAX_FOLDED_ELEMENTS = 1024  # any_of / all_of write one term per element


def _fold_elements(name: str, region, join) -> Expr:
    import itertools

    from tilecraft.language.tileops import region_of

    r = region_of(region, f"T.{name}")
    if r is None:
        raise IRError(f"T.{name} takes a buffer or a region (A[i, :]), got {type(region).__name__}")
    extents = [E.const_value(x.extent) for x in r.ranges]
    if not all(isinstance(e, int) for e in extents) or pymath.prod(extents) > MAX_FOLDED_ELEMENTS:
        raise IRError(f"T.{name} needs a region of static extents of at most {MAX_FOLDED_ELEMENTS} elements, "
                      f"got {r}")  # fmt: skip
    terms = []
    for offsets in itertools.product(*(range(e) for e in extents)):
        index = tuple(E.add(x.min, k) if k else x.min for x, k in zip(r.ranges, offsets))
        load = E.BufferLoad(r.dtype, r.buffer, index)
        terms.append(load if r.dtype == dt.bool_ else E.compare(E.NE, load, E.const(0, r.dtype)))
    result = terms[0]
    for term in terms[1:]:
        result = join(result, term)
    return result


def And(a, b):  # noqa: N802
    return E.logical_and(a, b)


def Or(a, b):  # noqa: N802
    return E.logical_or(a, b)


def Not(a):  # noqa: N802
    return E.logical_not(a)


def infinity(dtype) -> Expr:
    return E.const(float("inf"), dtype)


def _info(dtype):
    dtype = dt.as_dtype(dtype)
    npd = dt.numpy_dtype(dtype)
    return dtype, (np.finfo(npd) if dtype.is_float else np.iinfo(npd))


def clamp(dst, min_val, max_val):
    """`dst` limited to [min_val, max_val]: `T.min(T.max(dst, min_val), max_val)`, as TileLang's
    `T.clamp(dst, min_val, max_val)` (its parameter names, which its tests pass as keywords)."""
    if _all_py(min_val, max_val) and min_val > max_val:
        raise IRError(f"T.clamp: the lower bound {min_val} is above the upper bound {max_val}")
    return min(max(dst, min_val), max_val)


def max_value(dtype) -> Expr:
    """The largest finite value of `dtype`."""
    dtype, info = _info(dtype)
    return E.const(float(info.max) if dtype.is_float else int(info.max), dtype)


def min_value(dtype) -> Expr:
    """The lowest finite value of `dtype`."""
    dtype, info = _info(dtype)
    return E.const(float(info.min) if dtype.is_float else int(info.min), dtype)


def call_intrin(dtype, op: str, *args) -> Expr:
    """A backend intrinsic by name (printed IR uses this for calls without a T.* spelling).

    String arguments (a format, a name) become `StringImm`s, typed as C strings' int8 elements.
    """
    # A dtype is a str too (as in TileLang), but it is not a string argument.
    args = tuple(
        E.StringImm(dt.int8, a) if isinstance(a, str) and not isinstance(a, dt.DataType) else a for a in args
    )
    return E.call(op, *args, dtype=dtype)


def Ramp(base, stride, lanes: int) -> Expr:  # noqa: N802
    base, stride = E.match_types(base, stride)
    return E.Ramp(base.dtype.with_lanes(lanes), base, stride, int(lanes))


def Broadcast(value, lanes: int) -> Expr:  # noqa: N802
    value = convert(value)
    return E.Broadcast(value.dtype.with_lanes(lanes), value, int(lanes))


def _int_operand(x) -> Expr:
    # TVM converts a Python int to an int32 constant before matching types (T.shift_left(1, u8) is int32)
    return x if isinstance(x, Expr) else E.convert(x)


def shift_left(a, b) -> Expr:
    """TVM's `T.shift_left(a, b)`: `a << b` (a Python int operand is an int32 constant)."""
    return E.int_call("shift_left", _int_operand(a), _int_operand(b))


def shift_right(a, b) -> Expr:
    """TVM's `T.shift_right(a, b)`: `a >> b`."""
    return E.int_call("shift_right", _int_operand(a), _int_operand(b))


def bitwise_and(a, b) -> Expr:
    return E.int_call("bitwise_and", _int_operand(a), _int_operand(b))


def bitwise_or(a, b) -> Expr:
    return E.int_call("bitwise_or", _int_operand(a), _int_operand(b))


def bitwise_xor(a, b) -> Expr:
    return E.int_call("bitwise_xor", _int_operand(a), _int_operand(b))


def bitwise_not(a) -> Expr:
    return ~_int_operand(a)
