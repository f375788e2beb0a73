"""Expressions of the tile IR.

Nodes are immutable. Python operators build IR (``a + b`` is an ``Add``, ``a == b`` an ``EQ``), so
nodes compare and hash by identity; use :func:`tilecraft.ir.structural_equal` to compare structure.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from tilecraft.errors import short_repr
from tilecraft.ir import dtype as dt
from tilecraft.ir import nodes
from tilecraft.ir.dtype import DataType
from tilecraft.ir.span import Span

if TYPE_CHECKING:
    from tilecraft.ir.buffer import Buffer

_node_dataclass = dataclass(frozen=True, eq=False, slots=True, repr=False)


def node(cls: type) -> type:
    """Class decorator of IR nodes: an immutable dataclass compared by identity, registered by name so
    printed IR can name it (tilecraft.ir.nodes)."""
    return nodes.register(_node_dataclass(cls))


class IRError(TypeError):
    """An IR construction mistake: wrong operand types or dtypes."""


@node
class Node:
    """Base of every IR node; `span` points into the user's source when known."""

    span: Span | None = field(default=None, kw_only=True, repr=False)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        from tilecraft.ir.printer import print_ir

        return f"<{type(self).__name__}>\n{print_ir(self)}"


@node
class Expr(Node):
    """An expression with a scalar (or short-vector) dtype."""

    dtype: DataType

    __hash__ = object.__hash__

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return div(other, self)

    def __floordiv__(self, other):
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        return floordiv(other, self)

    def __mod__(self, other):
        return floormod(self, other)

    def __rmod__(self, other):
        return floormod(other, self)

    def __neg__(self):
        return sub(const(0, self.dtype), self)

    def __pos__(self):
        return self

    def __abs__(self):
        return call("abs", self)

    def __lt__(self, other):
        return compare(LT, self, other)

    def __le__(self, other):
        return compare(LE, self, other)

    def __gt__(self, other):
        return compare(GT, self, other)

    def __ge__(self, other):
        return compare(GE, self, other)

    def __eq__(self, other):  # type: ignore[override]
        return compare(EQ, self, other)

    def __ne__(self, other):  # type: ignore[override]
        return compare(NE, self, other)

    def __and__(self, other):
        return logical_or_bitwise(And, "bitwise_and", self, other)

    def __rand__(self, other):
        return logical_or_bitwise(And, "bitwise_and", other, self)

    def __or__(self, other):
        return logical_or_bitwise(Or, "bitwise_or", self, other)

    def __ror__(self, other):
        return logical_or_bitwise(Or, "bitwise_or", other, self)

    def __xor__(self, other):
        return int_call("bitwise_xor", self, other)

    def __rxor__(self, other):
        return int_call("bitwise_xor", other, self)

    def __lshift__(self, other):
        return int_call("shift_left", self, other)

    def __rlshift__(self, other):
        return int_call("shift_left", other, self)

    def __rshift__(self, other):
        return int_call("shift_right", self, other)

    def __rrshift__(self, other):
        return int_call("shift_right", other, self)

    def __invert__(self):
        if self.dtype.is_bool:
            return logical_not(self)
        return call("bitwise_not", self)

    def __bool__(self) -> bool:
        raise IRError(
            f"the truth value of a symbolic expression ({self}) is unknown while the kernel is parsed; "
            "use it as an `if` condition inside the kernel or a @T.macro (a plain Python function runs while "
            "parsing), or T.if_then_else(cond, a, b)"
        )

    def __index__(self) -> int:
        raise IRError(f"symbolic expression {self} cannot be used where Python needs an integer")

    def astype(self, dtype) -> Expr:
        return cast(self, dtype)

    def __str__(self) -> str:
        from tilecraft.ir.printer import expr_to_str

        return expr_to_str(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


@node
class IntImm(Expr):
    value: int

    def __bool__(self) -> bool:
        return bool(self.value)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


@node
class FloatImm(Expr):
    value: float

    def __bool__(self) -> bool:
        return bool(self.value)

    def __float__(self) -> float:
        return self.value


@node
class StringImm(Expr):
    """A string argument of an intrinsic call (`T.print` messages)."""

    value: str


@node
class Var(Expr):
    """A named scalar: a loop variable, a block or thread index, a scalar parameter, a dynamic dim."""

    name: str


@node
class BinaryOp(Expr):
    a: Expr
    b: Expr
    symbol: ClassVar[str] = "?"


@node
class Add(BinaryOp):
    symbol: ClassVar[str] = "+"


@node
class Sub(BinaryOp):
    symbol: ClassVar[str] = "-"


@node
class Mul(BinaryOp):
    symbol: ClassVar[str] = "*"


@node
class Div(BinaryOp):
    """`/`: true division for floats, truncating division for integers (C semantics)."""

    symbol: ClassVar[str] = "/"


@node
class FloorDiv(BinaryOp):
    symbol: ClassVar[str] = "//"


@node
class FloorMod(BinaryOp):
    symbol: ClassVar[str] = "%"


@node
class TruncMod(BinaryOp):
    """Remainder of truncating division (C's `%`)."""

    symbol: ClassVar[str] = "truncmod"


@node
class Min(BinaryOp):
    symbol: ClassVar[str] = "min"


@node
class Max(BinaryOp):
    symbol: ClassVar[str] = "max"


@node
class CmpOp(BinaryOp):
    """A comparison; its dtype is bool."""


@node
class EQ(CmpOp):
    symbol: ClassVar[str] = "=="


@node
class NE(CmpOp):
    symbol: ClassVar[str] = "!="


@node
class LT(CmpOp):
    symbol: ClassVar[str] = "<"


@node
class LE(CmpOp):
    symbol: ClassVar[str] = "<="


@node
class GT(CmpOp):
    symbol: ClassVar[str] = ">"


@node
class GE(CmpOp):
    symbol: ClassVar[str] = ">="


@node
class And(BinaryOp):
    symbol: ClassVar[str] = "and"


@node
class Or(BinaryOp):
    symbol: ClassVar[str] = "or"


@node
class Not(Expr):
    a: Expr


@node
class Select(Expr):
    """`cond ? true_value : false_value`; both branches may be evaluated."""

    condition: Expr
    true_value: Expr
    false_value: Expr


@node
class Cast(Expr):
    value: Expr


@node
class Call(Expr):
    """An intrinsic by name (math functions, bitwise ops, `print`, backend intrinsics)."""

    op: str
    args: tuple[Expr, ...]


@node
class BufferLoad(Expr):
    buffer: Buffer
    indices: tuple[Expr, ...]


# The C++ memory orders an atomic expression may name, in the order of their ids (std::memory_order and
# cuda::memory_order number them so; GCC's __ATOMIC_* constants too).
MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
# What each kind of AtomicValue may name (a load cannot release, a store cannot acquire).
ATOMIC_VALUE_ORDERS = {
    "load": ("relaxed", "consume", "acquire", "seq_cst"),
    "store": ("relaxed", "release", "seq_cst"),
    "add": MEMORY_ORDERS,
    "max": MEMORY_ORDERS,
    "min": MEMORY_ORDERS,
}


@node
class AtomicValue(Expr):
    """An atomic access of one element as an expression: `load` gives the element; `store` writes
    `value` into it (a statement's expression, of no use as a value); `add` / `max` / `min` update it
    with `value` and give the value it held before. `target` is the element (a load of it), so passes
    that rewrite loads rewrite the address too; `memory_order` is one of MEMORY_ORDERS."""

    kind: str
    target: BufferLoad
    value: Expr | None = None
    memory_order: str = "seq_cst"


@node
class Ramp(Expr):
    """The vector `base + i * stride` for i in 0..lanes; produced by vectorizing passes."""

    base: Expr
    stride: Expr
    lanes: int


@node
class Broadcast(Expr):
    """A scalar replicated over `lanes`; produced by vectorizing passes."""

    value: Expr
    lanes: int


# ---------------------------------------------------------------- construction helpers

ExprLike = Expr | int | float | bool


def const(value: bool | int | float, dtype: DataType | str | None = None) -> Expr:
    """A constant of `dtype` (inferred from the Python type when omitted)."""
    if dtype is None:
        dtype = dt.bool_ if isinstance(value, bool) else dt.int32 if isinstance(value, int) else dt.float32
    dtype = dt.as_dtype(dtype)
    if dtype.is_float:
        return FloatImm(dtype, float(value))
    if dtype.is_bool:
        return IntImm(dtype, int(bool(value)))
    if isinstance(value, float) and not value.is_integer():
        raise IRError(f"constant {value!r} is not an integer but the requested dtype is {dtype}")
    return IntImm(dtype, int(value))


def is_const(x: object) -> bool:
    return isinstance(x, (IntImm, FloatImm))


def const_value(x: Expr | int | float) -> int | float | None:
    """The Python value of a constant expression or number, else None."""
    if isinstance(x, (IntImm, FloatImm)):
        return x.value
    if isinstance(x, (bool, int, float)):
        return x
    return None


def same_expr(a: Any, b: Any) -> bool:
    """Whether `a` and `b` are the same expression over the same Vars and buffers.

    `structural_equal` matches distinct free Vars up to renaming (`k` equals `j`); this does not.
    """
    return identity_key(a) == identity_key(b)


def identity_key(value: Any) -> Any:
    """A hashable key of an expression's structure in which Vars and buffers count by identity."""
    if isinstance(value, Var) or (isinstance(value, Node) and not isinstance(value, Expr)):
        return id(value)
    if isinstance(value, Expr):
        names = (f.name for f in fields(value) if f.name != "span")
        return (type(value).__name__, *(identity_key(getattr(value, n)) for n in names))
    if isinstance(value, tuple):
        return tuple(identity_key(v) for v in value)
    return repr(value)


def convert(value: Any, like: DataType | None = None) -> Expr:
    """Turn a Python number into a constant; the dtype follows `like` where it fits."""
    if isinstance(value, Expr):
        return value
    if hasattr(value, "__tilecraft_expr__"):
        return value.__tilecraft_expr__()
    if isinstance(value, bool):
        return const(value, dt.bool_)
    if isinstance(value, int):
        if like is not None and (like.is_float or (like.is_integer and _int_fits(value, like))):
            return const(value, like.element())
        return const(value, dt.int64 if not -(2**31) <= value < 2**31 else dt.int32)
    if isinstance(value, float):
        if like is not None and like.is_float:
            return const(value, like.element())
        return const(value, dt.float32)
    if _is_numpy_scalar(value):
        return const(value.item(), dt.as_dtype(value.dtype))
    raise IRError(f"cannot use {type(value).__name__} value {short_repr(value)} in a kernel expression")


def _int_fits(value: int, dtype: DataType) -> bool:
    if dtype.is_uint:
        return 0 <= value < 2**dtype.bits
    return -(2 ** (dtype.bits - 1)) <= value < 2 ** (dtype.bits - 1)


def _is_numpy_scalar(value: object) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0


def cast(value: ExprLike, dtype) -> Expr:
    dtype = dt.as_dtype(dtype)
    value = convert(value, dtype)
    if value.dtype == dtype:
        return value
    if isinstance(value, IntImm) and (dtype.is_integer or dtype.is_bool or dtype.is_float):
        return const(wrap_int(value.value, dtype), dtype)
    if isinstance(value, FloatImm) and dtype.is_float:
        return FloatImm(dtype, value.value)
    return Cast(dtype, value)


def match_types(a: ExprLike, b: ExprLike) -> tuple[Expr, Expr]:
    """Convert both operands to one dtype, as TileLang does for mixed arithmetic."""
    if not isinstance(a, Expr) and not isinstance(b, Expr):
        a, b = convert(a), convert(b)
    elif not isinstance(a, Expr):
        a = convert(a, b.dtype)
    elif not isinstance(b, Expr):
        b = convert(b, a.dtype)
    if a.dtype != b.dtype:
        target = dt.promote(a.dtype, b.dtype)
        a, b = cast(a, target), cast(b, target)
    return a, b


def _fold_min(x, y):
    """NumPy's minimum: NaN when either operand is NaN (Python's min depends on the order)."""
    return x if x != x else y if y != y else min(x, y)


def _fold_max(x, y):
    """NumPy's maximum: NaN when either operand is NaN."""
    return x if x != x else y if y != y else max(x, y)


_FOLD = {
    "Add": operator.add,
    "Sub": operator.sub,
    "Mul": operator.mul,
    "Min": _fold_min,
    "Max": _fold_max,
}


def _fold_int_div(cls, x: int, y: int) -> int | None:
    if y == 0:
        return None
    if cls is FloorDiv:
        return x // y
    if cls is FloorMod:
        return x % y
    if cls is Div:
        return int(x / y) if abs(x) < 2**52 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)
    if cls is TruncMod:
        return int(math.fmod(x, y))
    return None


def wrap_int(value, dtype: DataType):
    """`value` as an integer dtype holds it: wrapped around at its width, as the generated code computes
    (constants fold the way data arithmetic runs; docs/language.md "Integer arithmetic")."""
    if not dtype.is_integer or isinstance(value, float):
        return value
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.kind == "int" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _fold(cls, a: Expr, b: Expr) -> Expr | None:
    if not (is_const(a) and is_const(b)):
        return None
    x, y = a.value, b.value
    if cls.__name__ in _FOLD:
        return const(wrap_int(_FOLD[cls.__name__](x, y), a.dtype), a.dtype)
    if a.dtype.is_integer or a.dtype.is_bool:
        r = _fold_int_div(cls, int(x), int(y))
        return None if r is None else const(wrap_int(r, a.dtype), a.dtype)
    if cls is Div and y != 0:
        return const(x / y, a.dtype)
    return None


def binary(cls: type[BinaryOp], a: ExprLike, b: ExprLike) -> Expr:
    """Build `cls(a, b)` with matched dtypes, folding when both operands are constants."""
    a, b = match_types(a, b)
    folded = _fold(cls, a, b)
    return folded if folded is not None else cls(a.dtype, a, b)


def add(a, b):
    return binary(Add, a, b)


def sub(a, b):
    return binary(Sub, a, b)


def mul(a, b):
    return binary(Mul, a, b)


def div(a, b):
    return binary(Div, a, b)


def truncdiv(a, b):
    return binary(Div, a, b)


def floordiv(a, b):
    return binary(FloorDiv, a, b)


def floormod(a, b):
    return binary(FloorMod, a, b)


def truncmod(a, b):
    return binary(TruncMod, a, b)


def min_(a, b):
    return binary(Min, a, b)


def max_(a, b):
    return binary(Max, a, b)


_CMP = {
    "EQ": operator.eq,
    "NE": operator.ne,
    "LT": operator.lt,
    "LE": operator.le,
    "GT": operator.gt,
    "GE": operator.ge,
}


def compare(cls: type[CmpOp], a: ExprLike, b: ExprLike) -> Expr:
    a, b = match_types(a, b)
    if is_const(a) and is_const(b):
        return const(_CMP[cls.__name__](a.value, b.value), dt.bool_)
    return cls(dt.bool_.with_lanes(a.dtype.lanes), a, b)


def _as_bool(x: ExprLike) -> Expr:
    x = convert(x)
    return x if x.dtype.is_bool else compare(NE, x, 0)


def logical_and(a: ExprLike, b: ExprLike) -> Expr:
    a, b = _as_bool(a), _as_bool(b)
    if is_const(a):
        return b if a.value else a
    if is_const(b):
        return a if b.value else b
    return And(dt.bool_, a, b)


def logical_or(a: ExprLike, b: ExprLike) -> Expr:
    a, b = _as_bool(a), _as_bool(b)
    if is_const(a):
        return a if a.value else b
    if is_const(b):
        return b if b.value else a
    return Or(dt.bool_, a, b)


def logical_not(a: ExprLike) -> Expr:
    a = _as_bool(a)
    if is_const(a):
        return const(not a.value, dt.bool_)
    return Not(dt.bool_, a)


def logical_or_bitwise(logical: type, bitwise: str, a: ExprLike, b: ExprLike) -> Expr:
    a, b = match_types(a, b)
    if a.dtype.is_bool:
        return logical_and(a, b) if logical is And else logical_or(a, b)
    return int_call(bitwise, a, b)


def int_call(op: str, a: ExprLike, b: ExprLike) -> Expr:
    a, b = match_types(a, b)
    if not (a.dtype.is_integer or a.dtype.is_bool):
        raise IRError(f"{op} needs integer operands, got {a.dtype}")
    return Call(a.dtype, op, (a, b))


def select(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> Expr:
    condition = _as_bool(condition)
    true_value, false_value = match_types(true_value, false_value)
    if is_const(condition):
        return true_value if condition.value else false_value
    return Select(true_value.dtype, condition, true_value, false_value)


def call(op: str, *args: ExprLike, dtype: DataType | str | None = None) -> Expr:
    """An intrinsic call; the dtype defaults to the first argument's."""
    exprs = tuple(convert(a) for a in args)
    if dtype is None:
        if not exprs:
            raise IRError(f"intrinsic {op} needs a dtype")
        dtype = exprs[0].dtype
    return Call(dt.as_dtype(dtype), op, exprs)
