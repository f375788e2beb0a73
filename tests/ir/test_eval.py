"""The reference expression evaluator: C semantics for integers, IEEE rounding for floats."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.eval import cast_value, evaluate

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def i32(v: int) -> E.IntImm:
    return E.IntImm(dt.int32, v)


def f32(v: float) -> E.FloatImm:
    return E.FloatImm(dt.float32, v)


def f64(v: float) -> E.FloatImm:
    return E.FloatImm(dt.float64, v)


SIGNED_PAIRS = [(a, b) for a in (-7, -6, -1, 0, 1, 5, 7, 100) for b in (-3, -2, -1, 1, 2, 3, 8)]


@pytest.mark.parametrize(("a", "b"), SIGNED_PAIRS)
def test_integer_division_semantics(a: int, b: int) -> None:
    trunc_q = int(a / b)  # exact for these small operands
    assert evaluate(E.Div(dt.int32, i32(a), i32(b))) == trunc_q
    assert evaluate(E.TruncMod(dt.int32, i32(a), i32(b))) == int(math.fmod(a, b))
    assert evaluate(E.TruncMod(dt.int32, i32(a), i32(b))) == a - b * trunc_q
    assert evaluate(E.FloorDiv(dt.int32, i32(a), i32(b))) == a // b
    assert evaluate(E.FloorMod(dt.int32, i32(a), i32(b))) == a % b


def test_integer_division_by_zero_raises() -> None:
    x = E.Var(dt.int32, "x")
    for cls in (E.Div, E.TruncMod, E.FloorDiv, E.FloorMod):
        with pytest.raises(ZeroDivisionError):
            evaluate(cls(dt.int32, x, i32(0)), {x: 3})


@pytest.mark.parametrize(
    ("cls", "a", "b"),
    [
        (E.Add, INT32_MAX, 1),
        (E.Sub, INT32_MIN, 1),
        (E.Mul, 65536, 65536),
        (E.Mul, 123456789, 987),
        (E.Mul, -99999, 77777),
        (E.Div, INT32_MIN, -1),
        (E.FloorDiv, INT32_MIN, -1),
    ],
)
def test_int32_wraps_like_c(cls: type, a: int, b: int) -> None:
    ops = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.Div: np.floor_divide}
    ops[E.FloorDiv] = np.floor_divide
    with np.errstate(all="ignore"):
        expected = int(ops[cls](np.array([a], np.int32), np.array([b], np.int32))[0])
    if cls is E.Div:  # INT32_MIN / -1 truncates to 2**31, which wraps to INT32_MIN
        expected = INT32_MIN
    assert evaluate(cls(dt.int32, i32(a), i32(b))) == expected


def test_unsigned_and_narrow_types_wrap() -> None:
    u8 = lambda v: E.IntImm(dt.uint8, v)  # noqa: E731
    assert evaluate(E.Sub(dt.uint8, u8(3), u8(5))) == 254
    assert evaluate(E.Add(dt.uint8, u8(200), u8(100))) == 44
    i8 = lambda v: E.IntImm(dt.int8, v)  # noqa: E731
    assert evaluate(E.Add(dt.int8, i8(127), i8(1))) == -128
    assert evaluate(E.Mul(dt.int64, E.IntImm(dt.int64, 2**62), E.IntImm(dt.int64, 2))) == -(2**63)


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (-2.7, dt.int32, -2),
        (2.7, dt.int32, 2),
        (2**31 + 5, dt.int32, INT32_MIN + 5),
        (-1, dt.uint32, 2**32 - 1),
        (300, dt.uint8, 44),
        (3.9, dt.uint8, 3),
        (0, dt.bool_, False),
        (-3, dt.bool_, True),
        (0.25, dt.bool_, True),
        (True, dt.int32, 1),
    ],
)
def test_cast_to_integer_and_bool(value, target, expected) -> None:
    src = dt.float64 if isinstance(value, float) else dt.int64 if not isinstance(value, bool) else dt.bool_
    const = E.FloatImm(src, value) if src.is_float else E.IntImm(src, int(value))
    result = evaluate(E.Cast(target, const))
    assert result == expected
    assert type(result) is type(expected)


@pytest.mark.parametrize(
    ("target", "np_type"),
    [(dt.float32, np.float32), (dt.float16, np.float16), (dt.bfloat16, ml_dtypes.bfloat16)],
)
@pytest.mark.parametrize("value", [0.1, 1 / 3, 65519.0, 1e-8, -2.5e5, 1e39])
def test_cast_to_narrow_floats_rounds(target, np_type, value: float) -> None:
    with np.errstate(all="ignore"):
        expected = float(np_type(value))
    assert evaluate(E.Cast(target, f64(value))) == expected


def test_cast_large_int_to_float32_rounds_once() -> None:
    # Through float64 this would round to the tie 2**60 + 2**36 and then to even, 2**60.
    value = 2**60 + 2**36 + 1
    assert evaluate(E.Cast(dt.float32, E.IntImm(dt.int64, value))) == float(2**60 + 2**37)
    assert evaluate(E.Cast(dt.float64, E.IntImm(dt.int64, 2**53 + 1))) == float(2**53)


def test_float32_arithmetic_rounds_every_operation() -> None:
    a, b = np.float32(0.1), np.float32(0.2)
    assert evaluate(E.Add(dt.float32, f32(0.1), f32(0.2))) == float(a + b)
    assert evaluate(E.Mul(dt.float32, f32(0.1), f32(3.0))) == float(a * np.float32(3.0))
    assert evaluate(E.Div(dt.float32, f32(1.0), f32(3.0))) == float(np.float32(1.0) / np.float32(3.0))
    h = np.float16
    expected16 = float(h(h(0.1) + h(1000.0)))
    assert (
        evaluate(E.Add(dt.float16, E.FloatImm(dt.float16, 0.1), E.FloatImm(dt.float16, 1000.0))) == expected16
    )
    big = E.Mul(dt.float32, f32(3e38), f32(10.0))
    assert evaluate(big) == math.inf


def test_float_division_follows_ieee() -> None:
    assert evaluate(E.Div(dt.float32, f32(1.0), f32(0.0))) == math.inf
    assert evaluate(E.Div(dt.float32, f32(-1.0), f32(0.0))) == -math.inf
    assert evaluate(E.Div(dt.float32, f32(1.0), f32(-0.0))) == -math.inf
    assert math.isnan(evaluate(E.Div(dt.float32, f32(0.0), f32(0.0))))
    assert evaluate(E.FloorDiv(dt.float64, f64(-7.0), f64(2.0))) == -4.0
    assert evaluate(E.FloorMod(dt.float64, f64(-7.0), f64(2.0))) == 1.0
    assert evaluate(E.TruncMod(dt.float64, f64(-7.0), f64(2.0))) == -1.0


def test_min_max_and_nan() -> None:
    x = E.Var(dt.int32, "x")
    assert evaluate(E.Min(dt.int32, x, i32(4)), {x: 9}) == 4
    assert evaluate(E.Max(dt.int32, x, i32(4)), {x: 9}) == 9
    # NumPy's minimum and maximum: NaN on either side gives NaN
    assert math.isnan(evaluate(E.Min(dt.float32, f32(math.nan), f32(2.0))))
    assert math.isnan(evaluate(E.Max(dt.float32, f32(1.0), f32(math.nan))))
    assert math.isnan(evaluate(E.Max(dt.float32, f32(math.nan), f32(1.0))))


def test_comparisons_and_logic() -> None:
    x = E.Var(dt.int32, "x")
    env = {x: 5}
    cases = [(E.LT, 6, True), (E.LT, 5, False), (E.LE, 5, True), (E.GT, 4, True), (E.GE, 6, False)]
    cases += [(E.EQ, 5, True), (E.NE, 5, False)]
    for cls, rhs, expected in cases:
        assert evaluate(cls(dt.bool_, x, i32(rhs)), env) is expected
    t, f = E.IntImm(dt.bool_, 1), E.IntImm(dt.bool_, 0)
    assert evaluate(E.And(dt.bool_, t, f)) is False
    assert evaluate(E.Or(dt.bool_, f, t)) is True
    assert evaluate(E.Not(dt.bool_, f)) is True
    assert math.isnan(math.nan) and evaluate(E.LT(dt.bool_, f32(math.nan), f32(1.0))) is False


def test_short_circuit_and_select_evaluate_only_what_is_needed() -> None:
    x = E.Var(dt.int32, "x")
    crash = E.EQ(dt.bool_, E.FloorDiv(dt.int32, i32(1), x), i32(0))
    f = E.IntImm(dt.bool_, 0)
    assert evaluate(E.And(dt.bool_, f, crash), {x: 0}) is False
    guarded = E.Select(dt.int32, E.NE(dt.bool_, x, i32(0)), E.FloorDiv(dt.int32, i32(10), x), i32(-1))
    assert evaluate(guarded, {x: 0}) == -1
    assert evaluate(guarded, {x: 3}) == 3


def _call(op: str, *args: E.Expr, dtype=dt.float64) -> E.Expr:
    return E.Call(dtype, op, tuple(args))


@pytest.mark.parametrize(
    ("op", "args", "expected"),
    [
        ("exp", (1.5,), math.exp(1.5)),
        ("exp2", (3.5,), 2**3.5),
        ("log", (2.0,), math.log(2.0)),
        ("log2", (10.0,), math.log2(10.0)),
        ("sqrt", (2.0,), math.sqrt(2.0)),
        ("rsqrt", (4.0,), 0.5),
        ("tanh", (0.3,), math.tanh(0.3)),
        ("sigmoid", (0.7,), 1 / (1 + math.exp(-0.7))),
        ("erf", (0.4,), math.erf(0.4)),
        ("pow", (2.0, 0.5), math.sqrt(2.0)),
        ("floor", (-1.5,), -2.0),
        ("ceil", (-1.5,), -1.0),
        ("round", (2.5,), 3.0),
        ("round", (-2.5,), -3.0),
        ("round", (0.49999999999999994,), 0.0),
        ("sin", (1.0,), math.sin(1.0)),
        ("cos", (1.0,), math.cos(1.0)),
        ("abs", (-3.25,), 3.25),
        ("fabs", (-3.25,), 3.25),
        ("log", (0.0,), -math.inf),
        ("exp", (1000.0,), math.inf),
        ("rsqrt", (0.0,), math.inf),
        ("sigmoid", (-1000.0,), 0.0),
        ("pow", (0.0, -1.0), math.inf),
    ],
)
def test_float_intrinsics(op: str, args: tuple, expected: float) -> None:
    assert evaluate(_call(op, *(f64(a) for a in args))) == expected


@pytest.mark.parametrize(("op", "arg"), [("sqrt", -1.0), ("log", -1.0), ("sin", math.inf)])
def test_float_intrinsics_domain_errors_give_nan(op: str, arg: float) -> None:
    assert math.isnan(evaluate(_call(op, f64(arg))))


def test_float32_intrinsic_result_is_rounded() -> None:
    assert evaluate(_call("exp", f32(1.0), dtype=dt.float32)) == float(np.float32(math.e))


@pytest.mark.parametrize(
    ("op", "args", "expected"),
    [
        ("bitwise_and", (12, 10), 8),
        ("bitwise_or", (12, 10), 14),
        ("bitwise_xor", (12, 10), 6),
        ("bitwise_not", (0,), -1),
        ("shift_left", (1, 31), INT32_MIN),
        ("shift_left", (3, 40), 0),
        ("shift_right", (-8, 1), -4),
        ("abs", (-7,), 7),
        ("abs", (INT32_MIN,), INT32_MIN),
        ("pow", (3, 4), 81),
        ("pow", (2, 31), INT32_MIN),
        ("floor", (7,), 7),
    ],
)
def test_integer_intrinsics(op: str, args: tuple, expected: int) -> None:
    assert evaluate(_call(op, *(i32(a) for a in args), dtype=dt.int32)) == expected


def test_unknown_intrinsic_names_the_op() -> None:
    with pytest.raises(ValueError, match="my_special_op"):
        evaluate(_call("my_special_op", f64(1.0)))


def test_variables_come_from_env_and_are_converted() -> None:
    n = E.Var(dt.int32, "n")
    grid = E.FloorDiv(dt.int32, E.Add(dt.int32, n, i32(127)), i32(128))
    assert evaluate(grid, {n: 1000}) == 8
    assert evaluate(grid, {n: np.int64(129)}) == 2
    y = E.Var(dt.float32, "y")
    assert evaluate(y, {y: 0.1}) == float(np.float32(0.1))
    assert evaluate(y, {y: 3}) == 3.0
    with pytest.raises(ValueError, match="'n'"):
        evaluate(grid, {})


def test_buffer_load_uses_a_callable_from_env() -> None:
    A = Buffer("A", (i32(4), i32(8)), dt.float32)
    i, j = E.Var(dt.int32, "i"), E.Var(dt.int32, "j")
    load = E.BufferLoad(dt.float32, A, (i, E.Add(dt.int32, j, i32(1))))
    data = np.arange(32, dtype=np.float32).reshape(4, 8) / 3
    seen = []

    def read(indices: tuple[int, ...]) -> float:
        seen.append(indices)
        return data[indices]

    assert evaluate(load, {i: 2, j: 3, A: read}) == float(data[2, 4])
    assert seen == [(2, 4)]
    with pytest.raises(ValueError, match="'A'"):
        evaluate(load, {i: 2, j: 3})


def test_vector_expressions_are_rejected() -> None:
    ramp = E.Ramp(dt.int32.with_lanes(4), i32(0), i32(1), 4)
    with pytest.raises(ValueError, match="Ramp"):
        evaluate(ramp)


def test_cast_value_matches_cast_nodes() -> None:
    assert cast_value(3.99, dt.int8) == 3
    assert cast_value(np.float32(1.5), dt.float16) == 1.5
    with pytest.raises(ValueError):
        cast_value(math.nan, dt.int32)
