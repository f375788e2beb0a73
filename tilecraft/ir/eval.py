"""A reference interpreter of scalar expressions with the semantics of the generated code.

Integer results wrap around to the width of their dtype, `Div` truncates toward zero, `TruncMod` is
C's `%`, `FloorDiv`/`FloorMod` are Python's `//`/`%`, and floating-point results are rounded to their
dtype after every operation (float16, bfloat16 and float8 through numpy/ml_dtypes). Both operands of
`And`/`Or` and only the chosen branch of a `Select` are evaluated, which is what a guarded load needs.

It also evaluates grid sizes at launch time, so dispatch is a dict lookup by node type.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType, numpy_dtype
from tilecraft.ir.narrowing import is_narrow_float, round_scalar_once

Value = int | float | bool

__all__ = ["SUPPORTED_INTRINSICS", "Value", "cast_value", "evaluate"]


def evaluate(expr: E.Expr, env: Mapping[Any, Any] | None = None) -> Value:
    """The value of `expr` with the free variables taken from `env`.

    `env` maps each `Var` to a Python (or numpy) number. A `BufferLoad` is evaluated by looking up its
    buffer object: `env.get(buffer)` must be a callable taking the tuple of evaluated indices and
    returning the element. Raises ValueError for a missing variable or buffer, an unknown intrinsic or
    a vector expression, and ZeroDivisionError for an integer division by zero.
    """
    return _eval(expr, {} if env is None else env)


def _eval(e: E.Expr, env: Mapping[Any, Any]) -> Value:
    handler = _DISPATCH.get(type(e))
    if handler is None:
        handler = _resolve(type(e))
    return handler(e, env)


def _resolve(cls: type) -> Callable:
    for base in cls.__mro__[1:]:
        if base in _DISPATCH:
            _DISPATCH[cls] = _DISPATCH[base]
            return _DISPATCH[base]
    raise ValueError(f"cannot evaluate a {cls.__name__} expression")


# ---------------------------------------------------------------- conversion to a dtype


_FLOAT_INFO: dict[str, tuple[Any, float]] = {}


def _float_info(dtype: DataType) -> tuple[Any, float]:
    """The scalar constructor of `dtype` and its largest finite value."""
    info = _FLOAT_INFO.get(dtype.name)
    if info is None:
        np_type = numpy_dtype(dtype.element()).type
        if dtype.kind == "float":
            largest = float(np.finfo(np_type).max)
        else:
            import ml_dtypes

            largest = float(ml_dtypes.finfo(np_type).max)
        info = _FLOAT_INFO[dtype.name] = (np_type, largest)
    return info


def _round_float(value: float, dtype: DataType) -> float:
    """`value` rounded to the nearest value of the float type `dtype` (round half to even)."""
    if dtype.bits == 64 and dtype.kind == "float":
        return float(value)
    if is_narrow_float(dtype) and dtype.kind != "float":
        return round_scalar_once(value, dtype)  # ml_dtypes before its fix rounds float64 twice
    np_type, largest = _float_info(dtype)
    if abs(value) > largest:
        # Rounding past the largest finite value is well defined (inf, or NaN for formats without
        # infinities); numpy only warns about it.
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np_type(value))
    return float(np_type(value))


def _int_to_float(value: int, dtype: DataType) -> float:
    """An integer rounded once (not via float64 first) to the float type `dtype`."""
    if abs(value) <= 2**53 or (dtype.bits == 64 and dtype.kind == "float"):
        return _round_float(float(value), dtype)
    # Round to odd at 53 bits; a second rounding to <= 24 significant bits is then exact.
    magnitude = abs(value)
    shift = magnitude.bit_length() - 53
    kept = magnitude >> shift
    if magnitude & ((1 << shift) - 1):
        kept |= 1
    return _round_float(math.copysign(math.ldexp(float(kept), shift), value), dtype)


def _wrap(value: int, dtype: DataType) -> int:
    bits = dtype.bits
    if dtype.kind == "uint":
        return value & ((1 << bits) - 1)
    half = 1 << (bits - 1)
    if -half <= value < half:
        return value
    return ((value + half) & ((1 << bits) - 1)) - half


def _to_int(value: Any) -> int:
    """A Python int from an int-like or by truncating a float toward zero, as a C cast does."""
    try:
        return operator.index(value)
    except TypeError:
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"cannot convert {number} to an integer type") from None
        return math.trunc(number)


def cast_value(value: Any, dtype: DataType) -> Value:
    """Convert a Python or numpy number to what `dtype` holds, with C cast semantics.

    Integers wrap around to the bit width, floats truncate toward zero when cast to integers, any
    nonzero value (NaN included) is true, and floats are rounded to the target float type.
    """
    kind = dtype.kind
    if kind == "int" or kind == "uint":
        return _wrap(_to_int(value), dtype)
    if kind == "bool":
        return bool(value)
    if isinstance(value, (bool, int, np.integer)):
        return _int_to_float(int(value), dtype)
    return _round_float(float(value), dtype)


def _normalize(value: Value, dtype: DataType) -> Value:
    """Bring an operation's exact result back into `dtype` (wrap ints, round floats)."""
    kind = dtype.kind
    if kind == "int" or kind == "uint":
        return _wrap(value, dtype)
    if kind == "bool":
        return bool(value)
    return _round_float(value, dtype)


# ---------------------------------------------------------------- leaves


def _eval_int_imm(e: E.IntImm, env: Mapping) -> Value:
    if e.dtype.kind == "bool":
        return bool(e.value)
    return _normalize(e.value, e.dtype) if e.dtype.is_integer else cast_value(e.value, e.dtype)


def _eval_float_imm(e: E.FloatImm, env: Mapping) -> Value:
    return cast_value(e.value, e.dtype)


def _eval_string_imm(e: E.StringImm, env: Mapping) -> Value:
    return e.value


def _eval_var(e: E.Var, env: Mapping) -> Value:
    try:
        value = env[e]
    except KeyError:
        raise ValueError(f"no value for variable {e.name!r} in the evaluation environment") from None
    return cast_value(value, e.dtype)


def _eval_buffer_load(e: E.BufferLoad, env: Mapping) -> Value:
    loader = env.get(e.buffer)
    if loader is None:
        raise ValueError(
            f"cannot evaluate a load from buffer {e.buffer.name!r}: the environment has no callable for it"
        )
    indices = tuple(_eval(i, env) for i in e.indices)
    return cast_value(loader(indices), e.dtype)


def _eval_vector(e: E.Expr, env: Mapping) -> Value:
    raise ValueError(f"cannot evaluate the vector expression {type(e).__name__}")


# ---------------------------------------------------------------- arithmetic


def _trunc_div(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("integer division by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _float_div(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _float_floor(x: float) -> float:
    return x if not math.isfinite(x) else float(math.floor(x))


def _float_floordiv(a: float, b: float) -> float:
    return _float_floor(_float_div(a, b))


def _float_floormod(a: float, b: float) -> float:
    return a - _float_floordiv(a, b) * b


def _float_truncmod(a: float, b: float) -> float:
    if b == 0 or not math.isfinite(a):
        return math.nan
    return math.fmod(a, b)


def _int_floordiv(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("integer division by zero")
    return a // b


def _int_floormod(a: int, b: int) -> int:
    if b == 0:
        raise ZeroDivisionError("integer modulo by zero")
    return a % b


def _int_truncmod(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


def _fmin(a: Value, b: Value) -> Value:
    # C's fminf: a NaN operand yields the other one.
    if a != a:
        return b
    if b != b:
        return a
    return b if b < a else a


def _fmax(a: Value, b: Value) -> Value:
    if a != a:
        return b
    if b != b:
        return a
    return b if b > a else a


def _nan_min(a: Value, b: Value) -> Value:
    # T.min is NumPy's minimum: a NaN operand gives NaN (docs/language.md).
    return a if a != a else b if b != b else (b if b < a else a)


def _nan_max(a: Value, b: Value) -> Value:
    return a if a != a else b if b != b else (b if b > a else a)


def _binary(int_op: Callable, float_op: Callable) -> Callable:
    def run(e: E.BinaryOp, env: Mapping) -> Value:
        a = _eval(e.a, env)
        b = _eval(e.b, env)
        if e.dtype.is_float:
            return _round_float(float_op(float(a), float(b)), e.dtype)
        return _normalize(int_op(a, b), e.dtype)

    return run


def _compare(op: Callable) -> Callable:
    def run(e: E.CmpOp, env: Mapping) -> bool:
        return op(_eval(e.a, env), _eval(e.b, env))

    return run


def _eval_and(e: E.And, env: Mapping) -> bool:
    return bool(_eval(e.a, env)) and bool(_eval(e.b, env))


def _eval_or(e: E.Or, env: Mapping) -> bool:
    return bool(_eval(e.a, env)) or bool(_eval(e.b, env))


def _eval_not(e: E.Not, env: Mapping) -> bool:
    return not _eval(e.a, env)


def _eval_select(e: E.Select, env: Mapping) -> Value:
    return _eval(e.true_value if _eval(e.condition, env) else e.false_value, env)


def _eval_cast(e: E.Cast, env: Mapping) -> Value:
    return cast_value(_eval(e.value, env), e.dtype)


# ---------------------------------------------------------------- intrinsics


def _ieee(math_fn: Callable, numpy_fn: Callable) -> Callable[[float], float]:
    """`math_fn`, falling back to numpy for the IEEE results (inf, NaN) that `math` raises on."""

    def run(x: float) -> float:
        try:
            return math_fn(float(x))
        except (ValueError, OverflowError, ZeroDivisionError):
            with np.errstate(all="ignore"):
                return float(numpy_fn(np.float64(x)))

    return run


def _ieee2(math_fn: Callable, numpy_fn: Callable) -> Callable[[float, float], float]:
    def run(x: float, y: float) -> float:
        try:
            return math_fn(float(x), float(y))
        except (ValueError, OverflowError, ZeroDivisionError):
            with np.errstate(all="ignore"):
                return float(numpy_fn(np.float64(x), np.float64(y)))

    return run


_exp = _ieee(math.exp, np.exp)
_sqrt = _ieee(math.sqrt, np.sqrt)


def _float_or_self(fn: Callable) -> Callable:
    """Apply `fn` to floats; integers pass through unchanged (floor/ceil/round of an int)."""

    def run(x: Value) -> Value:
        return x if isinstance(x, (int, np.integer)) else fn(float(x))

    return run


def _round_half_away(x: float) -> float:
    """C's round(): halfway cases away from zero."""
    if not math.isfinite(x):
        return x
    whole = math.trunc(x)
    if abs(x - whole) >= 0.5:
        whole += 1 if x > 0 else -1
    return math.copysign(float(whole), x)


def _sigmoid(x: float) -> float:
    return _float_div(1.0, 1.0 + _exp(-float(x)))


def _rsqrt(x: float) -> float:
    return _float_div(1.0, _sqrt(x))


def _abs(x: Value) -> Value:
    return abs(x) if isinstance(x, (int, np.integer)) else math.fabs(x)


_float_pow = _ieee2(math.pow, np.power)


def _float_fn(fn: Callable) -> Callable:
    """An intrinsic on floats: integer arguments (for an integer dtype) are converted first."""

    def run(dtype: DataType, *args: Value) -> Value:
        return fn(*(float(a) for a in args))

    return run


def _int_fn(fn: Callable) -> Callable:
    def run(dtype: DataType, *args: Value) -> Value:
        return fn(*(_to_int(a) for a in args))

    return run


def _any_fn(fn: Callable) -> Callable:
    def run(dtype: DataType, *args: Value) -> Value:
        return fn(*args)

    return run


def _pow(dtype: DataType, x: Value, y: Value) -> Value:
    if dtype.is_integer and isinstance(x, int) and isinstance(y, int) and y >= 0:
        return pow(x, y, 1 << dtype.bits)
    return _float_pow(x, y)


def _shift_left(dtype: DataType, a: Value, b: Value) -> int:
    # Every bit shifted past the width is dropped by the wrap-around; skip building a huge int.
    shift = _to_int(b)
    return 0 if shift >= dtype.bits else _to_int(a) << shift


_CALLS: dict[str, Callable[..., Value]] = {
    "exp": _float_fn(_exp),
    "exp2": _float_fn(lambda x: _float_pow(2.0, x)),
    "log": _float_fn(_ieee(math.log, np.log)),
    "log2": _float_fn(_ieee(math.log2, np.log2)),
    "log10": _float_fn(_ieee(math.log10, np.log10)),
    "sqrt": _float_fn(_sqrt),
    "rsqrt": _float_fn(_rsqrt),
    "tanh": _float_fn(math.tanh),
    "sigmoid": _float_fn(_sigmoid),
    "erf": _float_fn(math.erf),
    "sin": _float_fn(_ieee(math.sin, np.sin)),
    "cos": _float_fn(_ieee(math.cos, np.cos)),
    "tan": _float_fn(_ieee(math.tan, np.tan)),
    "pow": _pow,
    "fmod": _float_fn(_float_truncmod),
    "floor": _any_fn(_float_or_self(_float_floor)),
    "ceil": _any_fn(_float_or_self(lambda x: -_float_floor(-x) if math.isfinite(x) else x)),
    "trunc": _any_fn(_float_or_self(lambda x: float(math.trunc(x)) if math.isfinite(x) else x)),
    "round": _any_fn(_float_or_self(_round_half_away)),
    "abs": _any_fn(_abs),
    "fabs": _float_fn(math.fabs),
    "fmin": _any_fn(_fmin),
    "fmax": _any_fn(_fmax),
    "isnan": _float_fn(math.isnan),
    "isinf": _float_fn(math.isinf),
    "isfinite": _float_fn(math.isfinite),
    "bitwise_and": _int_fn(operator.and_),
    "bitwise_or": _int_fn(operator.or_),
    "bitwise_xor": _int_fn(operator.xor),
    "bitwise_not": _int_fn(operator.invert),
    "shift_left": _shift_left,
    "shift_right": _int_fn(operator.rshift),
}

SUPPORTED_INTRINSICS: frozenset[str] = frozenset(_CALLS)


def _eval_call(e: E.Call, env: Mapping) -> Value:
    fn = _CALLS.get(e.op)
    if fn is None:
        raise ValueError(f"cannot evaluate intrinsic {e.op!r}; supported: {', '.join(sorted(_CALLS))}")
    args = [_eval(a, env) for a in e.args]
    return cast_value(fn(e.dtype, *args), e.dtype)


_DISPATCH: dict[type, Callable[[Any, Mapping], Value]] = {
    E.IntImm: _eval_int_imm,
    E.FloatImm: _eval_float_imm,
    E.StringImm: _eval_string_imm,
    E.Var: _eval_var,
    E.BufferLoad: _eval_buffer_load,
    E.Ramp: _eval_vector,
    E.Broadcast: _eval_vector,
    E.Add: _binary(operator.add, operator.add),
    E.Sub: _binary(operator.sub, operator.sub),
    E.Mul: _binary(operator.mul, operator.mul),
    E.Div: _binary(_trunc_div, _float_div),
    E.FloorDiv: _binary(_int_floordiv, _float_floordiv),
    E.FloorMod: _binary(_int_floormod, _float_floormod),
    E.TruncMod: _binary(_int_truncmod, _float_truncmod),
    E.Min: _binary(_nan_min, _nan_min),
    E.Max: _binary(_nan_max, _nan_max),
    E.EQ: _compare(operator.eq),
    E.NE: _compare(operator.ne),
    E.LT: _compare(operator.lt),
    E.LE: _compare(operator.le),
    E.GT: _compare(operator.gt),
    E.GE: _compare(operator.ge),
    E.And: _eval_and,
    E.Or: _eval_or,
    E.Not: _eval_not,
    E.Select: _eval_select,
    E.Cast: _eval_cast,
    E.Call: _eval_call,
}
