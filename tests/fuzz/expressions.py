"""Random scalar expression trees: their kernel-language text, and a NumPy reference with an error bound.

Integer nodes are exact: NumPy with the node's own dtype, so results wrap around at the declared width
(the language's rule). Division is floor (`//`, `%`) or truncating (`/`, `T.truncmod`) on exact
Python integers. Divisors are built so they are never zero and never -1 (no INT_MIN // -1).

Float nodes are computed in float64 and carry a bound on the absolute error an implementation may make
(each operation rounding to its dtype, math functions a few ulps off), by running-error analysis. A
result that depends on rounding (a float comparison, a float-to-int cast, `T.floor` ... closer to the
edge than the error bound) is marked ambiguous and not compared. The generator keeps every float value
within +-LIMIT, so nothing overflows, even in float16, and no NaN can arise: arguments are made safe
(`T.log(T.abs(x) + 1.0)`, `x / (T.abs(y) + 1.0)`, `T.exp(T.min(x, 4.0))`) and large values clamped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.fuzz.choices import Chooser
from tests.fuzz.numerics import (
    DTYPES,
    FLOATS,
    INTS,
    bits,
    int_range,
    is_float,
    is_signed,
    np_dtype,
    smallest_subnormal,
    unit_roundoff,
    wrap,
)

INPUT_SCALE = 2.0  # float inputs are drawn with |x| <= INPUT_SCALE
LIMIT = (
    255.0  # |float value| <= LIMIT everywhere: LIMIT**2 < 65504 (float16's max), integers exact in bfloat16
)
FLOAT_CONSTANTS = (1.0, 0.5, 2.0, -1.0, 1.5, -0.75, 0.25, 3.0)  # exact in every float dtype
CAPS = {"exp": 4.0, "exp2": 7.0}  # arguments are capped so exp(x) <= LIMIT
# Allowed error of a math function, in ulps of its dtype (OpenCL's full-profile limits, rounded up).
FUNCTION_ULPS = {"exp": 4, "exp2": 4, "log": 4, "log2": 4, "sqrt": 4, "rsqrt": 4, "tanh": 8, "sigmoid": 8,
                 "erf": 20, "sin": 8, "cos": 8}  # fmt: skip
DIVISION_ULPS = 3  # OpenCL allows 2.5 ulps for a float division
BINARY_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "floormod": "%",
                 "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}  # fmt: skip
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
FLOAT_OPS = ("add", "sub", "mul", "min", "max", "neg", "abs", "div", "select", "cast", "mixed", "exp",
             "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "floor",
             "ceil", "round")  # fmt: skip
INT_OPS = ("add", "sub", "mul", "and", "or", "xor", "min", "max", "neg", "invert", "abs", "floordiv",
           "floormod", "div", "truncmod", "shl", "shr", "select", "cast", "mixed")  # fmt: skip
UNARY_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos")
ROUNDING = ("floor", "ceil", "round")


@dataclass(frozen=True, eq=False)
class Node:
    """One operation. `attr`: a constant's value, an input's index, a comparison's symbol, or for a
    cast whether it is implicit (the promotion of a binary operation, printed without `T.cast`)."""

    op: str
    dtype: str
    args: tuple[Node, ...] = ()
    attr: Any = None
    bound: float = 0.0  # float nodes: |value| <= bound
    guard: bool = False  # keeps a value safe (a clamp, a divisor's form): a minimizer must not replace it

    def text(self, leaves: Sequence[str]) -> str:
        """Kernel-language source, with `leaves[k]` as the text of input k."""
        a = [arg.text(leaves) for arg in self.args]
        op = self.op
        if op == "input":
            return leaves[self.attr]
        if op == "const":
            return f"T.{self.dtype}({self.attr!r})"
        if op == "cmp":
            return f"({a[0]} {self.attr} {a[1]})"
        if op in BINARY_SYMBOL:
            return f"({a[0]} {BINARY_SYMBOL[op]} {a[1]})"
        if op == "cast":
            return a[0] if self.attr else f'T.cast({a[0]}, "{self.dtype}")'
        if op in ("neg", "invert"):
            return f"({'-' if op == 'neg' else '~'}{a[0]})"
        if op == "select":
            return f"T.if_then_else({a[0]}, {a[1]}, {a[2]})"
        name = {"land": "And", "lor": "Or", "lnot": "Not"}.get(op, op)
        return f"T.{name}({', '.join(a)})"

    def count(self) -> int:
        return 1 + sum(arg.count() for arg in self.args)

    def uses(self) -> set[int]:
        """The inputs this expression reads."""
        own = {self.attr} if self.op == "input" else set()
        return own.union(*(arg.uses() for arg in self.args))


def input_leaf(dtype: str, index: int) -> Node:
    return Node("input", dtype, attr=index, bound=INPUT_SCALE if is_float(dtype) else 0.0)


def const(dtype: str, value: int | float) -> Node:
    return Node("const", dtype, attr=value, bound=abs(float(value)) if is_float(dtype) else 0.0)


# ---------------------------------------------------------------------------------------- the generator


class ExprGenerator:
    """Random well-defined expressions over inputs of the given dtypes."""

    def __init__(self, choose: Chooser, input_dtypes: Sequence[str]) -> None:
        self.choose = choose
        self.input_dtypes = tuple(input_dtypes)

    def expr(self, dtype: str, depth: int) -> Node:
        if depth <= 0 or self.choose.chance(10):
            return self.leaf(dtype)
        if is_float(dtype):
            return self._float_op(dtype, self.choose.choice(FLOAT_OPS), depth - 1)
        return self._int_op(dtype, self.choose.choice(INT_OPS), depth - 1)

    def leaf(self, dtype: str) -> Node:
        own = [k for k, d in enumerate(self.input_dtypes) if d == dtype]
        # Inputs are listed thrice: mostly inputs, some constants and conversions.
        kind = self.choose.choice(
            ("input", "input", "input", "const", "converted") if own else ("converted", "converted", "const")
        )
        if kind == "input":
            return input_leaf(dtype, self.choose.choice(own))
        if kind == "const":
            return const(dtype, self._constant(dtype))
        k = self.choose.integer(0, len(self.input_dtypes) - 1)
        return self.convert(input_leaf(self.input_dtypes[k], k), dtype)

    def condition(self, depth: int) -> Node:
        kind = self.choose.choice(("cmp", "land", "lor", "lnot")) if depth > 0 else "cmp"
        if kind == "lnot":
            return Node("lnot", "bool", (self.condition(depth - 1),))
        if kind != "cmp":
            return Node(kind, "bool", (self.condition(depth - 1), self.condition(depth - 1)))
        dtype = self.choose.choice(self.input_dtypes + DTYPES)
        left = self.expr(dtype, depth)
        right = self.expr(dtype, depth) if self.choose.chance(60) else const(dtype, self._constant(dtype))
        return Node("cmp", "bool", (left, right), attr=self.choose.choice(COMPARISONS))

    def convert(self, node: Node, dtype: str) -> Node:
        """`node` as `dtype` through T.cast, made safe: no float-to-int overflow, no float overflow."""
        src = node.dtype
        if src == dtype:
            return node
        if src == "bool":
            return self.convert(Node("cast", "int32", (node,)), dtype)
        if not is_float(src) and is_float(dtype):
            if dtype == "float16" and src not in ("int8", "uint8", "int16"):
                node = Node("cast", "int16", (node,), guard=True)  # a wider integer overflows float16
            lo, hi = int_range(node.dtype)
            return clamp(Node("cast", dtype, (node,), bound=float(max(-lo, hi))), LIMIT)
        if is_float(src) and not is_float(dtype):
            lo, hi = int_range(dtype)
            limited = clamp_between(node, float(max(lo, -LIMIT)), float(min(hi, LIMIT)))
            return Node("cast", dtype, (limited,))
        return Node("cast", dtype, (node,), bound=node.bound)

    # -------------------------------------------------------------------------------------- floats

    def _float_op(self, dtype: str, op: str, depth: int) -> Node:
        if op in ("add", "sub", "mul", "min", "max"):
            return self._float_binary(op, self.expr(dtype, depth), self.expr(dtype, depth))
        if op == "mixed":
            return self._mixed(dtype, depth)
        a = self.expr(dtype, depth) if op not in ("select", "cast") else None
        if op in ("neg", "abs"):
            return Node(op, dtype, (a,), bound=a.bound)
        if op == "div":
            magnitude = Node("abs", dtype, (self.expr(dtype, depth),), guard=True)
            den = Node("add", dtype, (magnitude, const(dtype, 1.0)), guard=True)
            return Node("div", dtype, (a, den), bound=a.bound)
        if op == "select":
            yes, no = self.expr(dtype, depth), self.expr(dtype, depth)
            return Node("select", dtype, (self.condition(depth), yes, no), bound=max(yes.bound, no.bound))
        if op == "cast":
            source = self.choose.choice(tuple(d for d in DTYPES if d != dtype))
            return self.convert(self.expr(source, depth), dtype)
        if op in ROUNDING:
            return Node(op, dtype, (a,), bound=float(math.ceil(a.bound)))
        return self._float_math(op, dtype, a)

    def _float_math(self, op: str, dtype: str, a: Node) -> Node:
        if op in CAPS:
            if a.bound > CAPS[op]:
                a = Node("min", dtype, (a, const(dtype, CAPS[op])), bound=a.bound, guard=True)
            bound = math.exp(CAPS[op]) if op == "exp" else 2.0 ** CAPS[op]
            return Node(op, dtype, (a,), bound=bound)
        if op in ("log", "log2", "sqrt", "rsqrt"):
            a = Node("abs", dtype, (a,), bound=a.bound, guard=True)
            if op != "sqrt":
                a = Node("add", dtype, (a, const(dtype, 1.0)), bound=a.bound + 1, guard=True)
            return Node(op, dtype, (a,), bound=math.sqrt(a.bound) if op == "sqrt" else max(a.bound, 1.0))
        return Node(op, dtype, (a,), bound=1.0)

    def _float_binary(self, op: str, a: Node, b: Node) -> Node:
        dtype = a.dtype
        if op in ("min", "max"):
            bound = max(a.bound, b.bound)
        else:
            bound = a.bound * b.bound if op == "mul" else a.bound + b.bound
        return clamp(Node(op, dtype, (a, b), bound=bound), LIMIT)

    def _mixed(self, dtype: str, depth: int) -> Node:
        """A binary operation with an operand of a narrower dtype, converted by promotion."""
        narrower = {"float64": ("float32", "float16", "bfloat16", "int8", "uint8", "int16", "int32"),
                    "float32": ("float16", "bfloat16", "int8", "uint8", "int16"),
                    "float16": ("int8", "uint8"), "bfloat16": ("int8", "uint8")}  # fmt: skip
        other = self.expr(self.choose.choice(narrower[dtype]), depth)
        bound = other.bound if is_float(other.dtype) else float(max(abs(v) for v in int_range(other.dtype)))
        promoted = Node("cast", dtype, (other,), attr=True, bound=bound)
        a = self.expr(dtype, depth)
        op = self.choose.choice(("add", "sub", "mul", "min", "max"))
        return self._float_binary(op, *((a, promoted) if self.choose.chance(50) else (promoted, a)))

    # ------------------------------------------------------------------------------------ integers

    def _int_op(self, dtype: str, op: str, depth: int) -> Node:
        if op in ("neg", "invert", "abs"):
            return Node(op, dtype, (self.expr(dtype, depth),))
        if op in ("floordiv", "floormod", "div", "truncmod"):
            return Node(op, dtype, (self.expr(dtype, depth), self._divisor(dtype, depth)))
        if op in ("shl", "shr"):
            amount = Node("const", dtype, attr=self.choose.integer(0, bits(dtype) - 1), guard=True)
            return Node(op, dtype, (self.expr(dtype, depth), amount))
        if op == "select":
            return Node(
                "select", dtype, (self.condition(depth), self.expr(dtype, depth), self.expr(dtype, depth))
            )
        if op == "cast":
            return self.convert(
                self.expr(self.choose.choice(tuple(d for d in DTYPES if d != dtype)), depth), dtype
            )
        if op == "mixed":
            narrower = tuple(d for d in INTS if bits(d) < bits(dtype))
            if not narrower:
                return self._int_op(dtype, "add", depth)
            other = Node("cast", dtype, (self.expr(self.choose.choice(narrower), depth),), attr=True)
            a = self.expr(dtype, depth)
            op = self.choose.choice(("add", "sub", "mul", "and", "or", "xor", "min", "max"))
            return Node(op, dtype, (a, other) if self.choose.chance(50) else (other, a))
        return Node(op, dtype, (self.expr(dtype, depth), self.expr(dtype, depth)))

    def _divisor(self, dtype: str, depth: int) -> Node:
        kind = self.choose.choice(("const", "or", "and"))
        if kind == "const":
            lo, hi = int_range(dtype)
            pool = (2, 3, 7, 1, 100, hi) + ((-2, -3, -7, -100, lo) if is_signed(dtype) else ())
            return const(dtype, self.choose.choice(tuple(v for v in pool if lo <= v <= hi)))
        b = self.expr(dtype, depth)
        if kind == "and":  # (b & 63) + 1: in [1, 64]
            low = Node("and", dtype, (b, const(dtype, 63)), guard=True)
            return Node("add", dtype, (low, const(dtype, 1)), guard=True)
        if not is_signed(dtype):  # b | 1: odd, so not zero
            return Node("or", dtype, (b, const(dtype, 1)), guard=True)
        # (b | 3) - 1: never 0 and never -1 (-1 | 3 is -1, minus 1 is -2), so INT_MIN // -1 cannot happen
        return Node(
            "sub", dtype, (Node("or", dtype, (b, const(dtype, 3)), guard=True), const(dtype, 1)), guard=True
        )

    def _constant(self, dtype: str) -> int | float:
        if is_float(dtype):
            return self.choose.choice(FLOAT_CONSTANTS)
        lo, hi = int_range(dtype)
        pool = (1, 2, 3, 7, 100, -1, -3, -100, 5, hi, lo, 200)
        return self.choose.choice(tuple(v for v in pool if lo <= v <= hi and v != 0))


def clamp(node: Node, limit: float) -> Node:
    """`node`, clamped to [-limit, limit] when its bound exceeds the limit."""
    if node.bound <= limit:
        return node
    return clamp_between(node, -limit, limit)


def clamp_between(node: Node, lo: float, hi: float) -> Node:
    upper = Node("min", node.dtype, (node, const(node.dtype, hi)), bound=node.bound, guard=True)
    return Node("max", node.dtype, (upper, const(node.dtype, lo)), bound=max(abs(lo), abs(hi)), guard=True)


# ----------------------------------------------------------------------------------- the reference


@dataclass
class Value:
    """A node's reference value per element: `v` (float64 for floats, the dtype for integers and bools),
    `err` a bound on an implementation's absolute error, `amb` where the result depends on rounding."""

    v: np.ndarray
    err: np.ndarray
    amb: np.ndarray


def evaluate(node: Node, inputs: Sequence[np.ndarray]) -> Value:
    """The reference value of `node`, with every input already broadcast to one shape."""
    shape = np.shape(inputs[0])
    with np.errstate(all="ignore"):
        return _evaluate(node, inputs, shape)


def _evaluate(node: Node, inputs: Sequence[np.ndarray], shape: tuple[int, ...]) -> Value:
    if node.op == "input":
        x = np.asarray(inputs[node.attr])
        v = x.astype(np.float64) if is_float(node.dtype) else x
        return Value(v, np.zeros(shape), np.zeros(shape, bool))
    if node.op == "const":
        v = np.full(shape, node.attr, dtype=np.float64 if is_float(node.dtype) else np_dtype(node.dtype))
        return Value(v, np.zeros(shape), np.zeros(shape, bool))
    args = [_evaluate(arg, inputs, shape) for arg in node.args]
    amb = np.logical_or.reduce([a.amb for a in args])
    if node.dtype == "bool":
        return _condition(node, args, amb)
    if node.op == "select":
        c, yes, no = args
        return Value(np.where(c.v, yes.v, no.v), np.where(c.v, yes.err, no.err), amb)
    if node.op == "cast":
        return _cast(node, args[0], amb)
    if is_float(node.dtype):
        v, err, ambiguous = _float(node, args)
        return Value(v, err, amb | ambiguous)
    return Value(integer_value(node, args), np.zeros(shape), amb)


def _condition(node: Node, args: list[Value], amb: np.ndarray) -> Value:
    if node.op == "lnot":
        return Value(~args[0].v, args[0].err, amb)
    if node.op in ("land", "lor"):
        v = (args[0].v & args[1].v) if node.op == "land" else (args[0].v | args[1].v)
        return Value(v, args[0].err, amb)
    a, b = args
    v = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
         "!=": np.not_equal}[node.attr](a.v, b.v)  # fmt: skip
    if is_float(node.args[0].dtype):
        tolerance = a.err + b.err
        amb = amb | ((tolerance > 0) & (np.abs(a.v - b.v) <= tolerance))
    return Value(v, np.zeros(np.shape(v)), amb)


def _cast(node: Node, a: Value, amb: np.ndarray) -> Value:
    src, dst = node.args[0].dtype, node.dtype
    if is_float(dst):
        v = a.v.astype(np.float64)
        err = a.err + _rounding(dst, v)
        if not is_float(src) and bits(src) > 53:  # float64 itself rounds these integers
            err = err + unit_roundoff("float64") * np.abs(v)
        return Value(v, err, amb)
    if is_float(src):  # truncation toward zero; ambiguous where the error could cross an integer
        near = (a.err > 0) & (np.abs(a.v - np.rint(a.v)) <= a.err)
        return Value(np.trunc(a.v).astype(np_dtype(dst)), np.zeros(np.shape(a.v)), amb | near)
    return Value(a.v.astype(np_dtype(dst)), np.zeros(np.shape(a.v)), amb)


def _rounding(dtype: str, v: np.ndarray) -> np.ndarray:
    return unit_roundoff(dtype) * np.abs(v) + smallest_subnormal(dtype)


def _float(node: Node, args: list[Value]) -> tuple[np.ndarray, np.ndarray, np.ndarray | bool]:
    op, dtype = node.op, node.dtype
    a = args[0]
    if op in ("add", "sub", "mul", "min", "max", "div"):
        return _float_binary(op, dtype, a, args[1])
    if op in ("neg", "abs"):
        return (-a.v if op == "neg" else np.abs(a.v)), a.err, False
    if op in ROUNDING:
        v = {"floor": np.floor, "ceil": np.ceil, "round": np.rint}[op](a.v)
        edge = np.floor(a.v) + 0.5 if op == "round" else np.rint(a.v)
        return v, np.zeros(np.shape(v)), (a.err > 0) & (np.abs(a.v - edge) <= a.err)
    v, spread = _math(op, a.v, a.err)
    ulps = FUNCTION_ULPS[op] * 2 * unit_roundoff(dtype)
    return v, spread + ulps * (np.abs(v) + (1.0 if op in ("tanh", "sigmoid", "erf", "sin", "cos") else 0.0)) \
        + smallest_subnormal(dtype), False  # fmt: skip


def _float_binary(op: str, dtype: str, a: Value, b: Value):
    if op in ("min", "max"):
        v = np.minimum(a.v, b.v) if op == "min" else np.maximum(a.v, b.v)
        # Where one operand is clearly the smaller (larger), the result carries only its error.
        a_below, b_below = a.v + a.err < b.v - b.err, b.v + b.err < a.v - a.err
        a_wins = a_below if op == "min" else b_below
        b_wins = b_below if op == "min" else a_below
        return v, np.where(a_wins, a.err, np.where(b_wins, b.err, np.maximum(a.err, b.err))), False
    if op == "div":  # the divisor is |y| + 1 >= 1
        v = a.v / b.v
        err = (a.err + np.abs(v) * b.err) / (np.abs(b.v) - b.err)
        return (
            v,
            err + DIVISION_ULPS * 2 * unit_roundoff(dtype) * np.abs(v) + smallest_subnormal(dtype),
            False,
        )
    if op == "mul":
        v = a.v * b.v
        err = np.abs(a.v) * b.err + np.abs(b.v) * a.err + a.err * b.err
    else:
        v = a.v + b.v if op == "add" else a.v - b.v
        err = a.err + b.err
    return v, err + _rounding(dtype, v), False


def _math(op: str, x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f(x), and how far f can move when x moves by up to e."""
    if op == "exp":
        v = np.exp(x)
        return v, v * np.expm1(e)
    if op == "exp2":
        v = np.exp2(x)
        return v, v * np.expm1(e * math.log(2))
    if op in ("log", "log2"):  # x >= 1
        spread = -np.log1p(-np.minimum(e / x, 0.5))
        return (np.log(x), spread) if op == "log" else (np.log2(x), spread / math.log(2))
    if op == "sqrt":  # x >= 0
        v = np.sqrt(x)
        return v, np.minimum(np.sqrt(e), e / np.maximum(v, 1e-300))
    if op == "rsqrt":  # x >= 1
        return 1.0 / np.sqrt(x), 0.5 * e * np.maximum(x - e, 0.5) ** -1.5
    slope = {"tanh": 1.0, "sigmoid": 0.25, "erf": 1.13, "sin": 1.0, "cos": 1.0}[op]
    v = {"tanh": np.tanh, "sigmoid": lambda t: 1 / (1 + np.exp(-t)), "sin": np.sin, "cos": np.cos,
         "erf": np.vectorize(math.erf, otypes=[np.float64])}[op](x)  # fmt: skip
    return v, np.minimum(slope * e, 2.0)


def integer_value(node: Node, args: list[Value]) -> np.ndarray:
    op, dtype = node.op, node.dtype
    a = args[0].v
    if op == "neg":
        return -a
    if op == "invert":
        return ~a
    if op == "abs":
        return np.abs(a)
    b = args[1].v
    if op in ("floordiv", "floormod", "div", "truncmod"):
        return wrap(_divide(op, a, b), dtype)
    return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and,
            "or": np.bitwise_or, "xor": np.bitwise_xor, "min": np.minimum, "max": np.maximum,
            "shl": np.left_shift, "shr": np.right_shift}[op](a, b)  # fmt: skip


def _divide(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    def one(x: int, y: int) -> int:
        if op == "floordiv":
            return x // y
        if op == "floormod":
            return x % y
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return q if op == "div" else x - y * q

    return np.frompyfunc(one, 2, 1)(a.astype(object), b.astype(object))


def float_tolerance(root: Value, dtype: str) -> np.ndarray:
    """The allowed |got - expected| of a stored result: the bound, plus the store's rounding."""
    return root.err + _rounding(dtype, root.v)


__all__ = ["FLOATS", "INTS", "ExprGenerator", "Node", "Value", "evaluate", "float_tolerance"]
