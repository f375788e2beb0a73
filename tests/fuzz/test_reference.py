"""The fuzz references themselves: integer semantics, and float error bounds that are neither too tight
(a correct implementation always passes) nor too loose (a precision bug is caught). No target needed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fuzz.cases import compare
from tests.fuzz.choices import HypothesisChooser
from tests.fuzz.expressions import (
    ExprGenerator,
    Node,
    Value,
    const,
    evaluate,
    float_tolerance,
    input_leaf,
    integer_value,
)
from tests.fuzz.numerics import FLOATS, is_float, np_dtype, random_values


def value_of(node: Node, *columns) -> np.ndarray:
    return evaluate(node, [np.asarray(c) for c in columns]).v


def test_integers_wrap_at_the_declared_width():
    x = input_leaf("uint8", 0)
    assert value_of(Node("floordiv", "uint8", (Node("sub", "uint8", (x, const("uint8", 7))), const("uint8", 2))),
                    np.array([3], np.uint8))[0] == 126  # fmt: skip
    y = input_leaf("int8", 0)
    square = Node("max", "int8", (Node("mul", "int8", (y, y)), const("int8", 0)))
    assert value_of(square, np.array([100, -128], np.int8)).tolist() == [16, 0]
    assert value_of(Node("abs", "int8", (y,)), np.array([-128], np.int8))[0] == -128
    assert (
        value_of(Node("invert", "uint16", (input_leaf("uint16", 0),)), np.array([5], np.uint16))[0] == 65530
    )


def test_division_floors_and_truncates_like_the_language():
    a, b = input_leaf("int32", 0), input_leaf("int32", 1)
    cols = np.array([-7, 7, -7], np.int32), np.array([2, -2, -2], np.int32)
    assert value_of(Node("floordiv", "int32", (a, b)), *cols).tolist() == [-4, -4, 3]
    assert value_of(Node("floormod", "int32", (a, b)), *cols).tolist() == [1, -1, -1]
    assert value_of(Node("div", "int32", (a, b)), *cols).tolist() == [-3, -3, 3]
    assert value_of(Node("truncmod", "int32", (a, b)), *cols).tolist() == [-1, 1, -1]
    big = np.array([16044655002480917037], np.uint64)
    assert value_of(Node("floormod", "uint64", (input_leaf("uint64", 0), const("uint64", 100))), big)[0] == 37


# ------------------------------------------------------------- a correct implementation always passes


def simulate(node: Node, inputs: list[np.ndarray]) -> np.ndarray:
    """What a correct implementation may compute: every float operation in float32 (float64 for
    float64) and rounded to its dtype, math functions from NumPy in that precision."""
    args = [simulate(a, inputs) for a in node.args]
    dtype = node.dtype
    if node.op == "input":
        x = inputs[node.attr]
        return x.astype(_compute(dtype)) if is_float(dtype) else x
    if node.op == "const":
        return np.full(inputs[0].shape, node.attr, _compute(dtype) if is_float(dtype) else np_dtype(dtype))
    if dtype == "bool":
        return _simulate_condition(node, args)
    if node.op == "select":
        return np.where(*args)
    if node.op == "cast":
        if is_float(dtype):
            return _round(args[0].astype(np_dtype(dtype)), dtype)
        source = args[0]
        return (np.trunc(source) if is_float(node.args[0].dtype) else source).astype(np_dtype(dtype))
    if not is_float(dtype):
        return integer_value(node, [Value(a, None, None) for a in args])
    return _round(_simulate_float(node.op, args), dtype)


def _compute(dtype: str):
    return np.float64 if dtype == "float64" else np.float32


def _round(x: np.ndarray, dtype: str) -> np.ndarray:
    return x.astype(np_dtype(dtype)).astype(_compute(dtype))


def _simulate_condition(node: Node, args: list[np.ndarray]) -> np.ndarray:
    if node.op == "lnot":
        return ~args[0]
    if node.op in ("land", "lor"):
        return (args[0] & args[1]) if node.op == "land" else (args[0] | args[1])
    return eval(f"args[0] {node.attr} args[1]")  # noqa: S307 - one of six comparison symbols


def _simulate_float(op: str, args: list[np.ndarray]) -> np.ndarray:
    a = args[0]
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "min": np.minimum,
              "max": np.maximum}  # fmt: skip
    if op in binary:
        return binary[op](a, args[1])
    one = a.dtype.type(1)
    unary = {"neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
             "sqrt": np.sqrt, "rsqrt": lambda t: one / np.sqrt(t), "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
             "sigmoid": lambda t: one / (one + np.exp(-t)), "floor": np.floor, "ceil": np.ceil, "round": np.rint,
             "erf": lambda t: np.vectorize(__import__("math").erf)(t.astype(np.float64)).astype(t.dtype)}  # fmt: skip
    return unary[op](a)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(data=st.data())
def test_a_correct_implementation_is_within_the_bound(data):
    choose = HypothesisChooser(data)
    input_dtypes = [choose.choice(("float32", "float16", "int8", "bfloat16", "float64", "int32", "uint16"))
                    for _ in range(choose.integer(1, 3))]  # fmt: skip
    out = choose.choice(FLOATS)
    expr = ExprGenerator(choose, input_dtypes).expr(out, choose.integer(1, 5))
    rng = np.random.default_rng(choose.integer(0, 2**32 - 1))
    inputs = [random_values(rng, (400,), d) for d in input_dtypes]
    root = evaluate(expr, inputs)
    with np.errstate(all="ignore"):
        got = simulate(expr, inputs).astype(np_dtype(out))
    found = compare("Y", got, root.v, float_tolerance(root, out), root.amb, lambda i: "")
    assert not found, f"{expr.text([f'X{k}' for k in range(len(inputs))])}\n" + "\n".join(found)


# ------------------------------------------------------------------------- precision bugs are caught


def test_float64_exp_computed_in_float32_is_caught():
    x = input_leaf("float64", 0)
    inputs = [random_values(np.random.default_rng(1), (200,), "float64")]
    root = evaluate(Node("exp", "float64", (x,)), inputs)
    wrong = np.exp(inputs[0].astype(np.float32)).astype(np.float64)
    assert compare("Y", wrong, root.v, float_tolerance(root, "float64"), root.amb, lambda i: "")


def test_float16_rounding_twice_the_bound_is_caught():
    x = input_leaf("float16", 0)
    inputs = [random_values(np.random.default_rng(2), (200,), "float16")]
    root = evaluate(Node("mul", "float16", (x, x)), inputs)
    tolerance = float_tolerance(root, "float16")
    assert compare("Y", root.v + 3 * tolerance, root.v, tolerance, root.amb, lambda i: "")


def test_an_integer_off_by_one_is_caught():
    x = input_leaf("uint8", 0)
    root = evaluate(Node("add", "uint8", (x, const("uint8", 1))), [np.array([1, 2], np.uint8)])
    assert compare("Y", root.v + np.uint8(1), root.v, None, root.amb, lambda i: "")


def test_nan_is_never_accepted():
    root = evaluate(input_leaf("float32", 0), [np.array([1.0], np.float32)])
    assert compare(
        "Y", np.array([np.nan]), root.v, float_tolerance(root, "float32"), np.array([True]), lambda i: ""
    )
