"""Short vector values and TileLang's packed two-lane intrinsics (`T.add2`, `T.sub2`, `T.mul2`, `T.fma2`,
`T.max2`, `T.min2`, `T.abs2`).

A vector value (a dtype with `lanes` > 1, such as float32x2) is what `A[T.Ramp(base, stride, n)]` loads,
what `T.Broadcast(x, n)` makes and what element-wise arithmetic on such values gives. Vectors live only
while a kernel is parsed: storing one (`C[T.Ramp(...)] = value`) becomes one store per lane, and naming
one (`v = A[idx]`) binds one immutable local per lane. So the IR every pass and code generator sees is
scalar, and lane `i` of a packed operation is the scalar operation on lane `i` of its operands, computed
as the language computes scalars of that dtype (16-bit floats in float32, rounded where stored or cast).
A vector that reaches anywhere else (a condition, a tile operation, a buffer of a vector dtype) is an
error of the semantic check at its line.
"""

from __future__ import annotations

from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType, as_dtype
from tilecraft.ir.expr import Expr, IRError, Var
from tilecraft.ir.op import FMA
from tilecraft.ir.span import Span

# The dtypes TileLang's packed intrinsics take (its _PACKED_X2_DTYPES).
PACKED_X2_DTYPES = ("float32x2", "bfloat16x2", "float16x2")
# The Call that holds a named vector's lanes (a scalar local each); also how a packed 4-bit pair is
# stored (tilecraft/transform/tile_loops.py).
VECTOR = "vector"
# Calls whose lane i is the same call on lane i of the arguments.
_ELEMENTWISE_CALLS = frozenset(
    ("abs", FMA, "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil",
     "round", "sin", "cos", "pow", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
     "shift_right")
)  # fmt: skip


def is_vector(x) -> bool:
    """Whether `x` is (or computes on) a vector value; a pair of 4-bit values (float4_e2m1fnx2, one
    byte of packed memory) is a stored form, not a vector."""
    return isinstance(x, Expr) and not x.dtype.is_packed and vector_lanes(x) > 1


def lanes_of(e: Expr) -> int:
    """The lanes of `e`'s value (1 for a scalar)."""
    return e.dtype.lanes


def _packed(what: str, *args) -> tuple[Expr, ...]:
    """The arguments as expressions, each of one packed x2 dtype (TileLang's checks and exceptions)."""
    exprs = []
    for arg in args:
        if not isinstance(arg, (Expr, int, float)) or isinstance(arg, bool):
            raise TypeError(f"T.{what}: expected a packed x2 value (an expression), got {type(arg).__name__}")
        exprs.append(E.convert(arg))
    for x in exprs:
        if str(x.dtype) not in PACKED_X2_DTYPES:
            raise ValueError(
                f"T.{what}: expected dtype in {sorted(PACKED_X2_DTYPES)}, got '{x.dtype}' (load two lanes "
                "with A[T.Ramp(base, 1, 2)])"
            )
    if len({x.dtype for x in exprs}) > 1:
        raise ValueError(
            f"T.{what}: expected all packed x2 arguments to have the same dtype, got "
            f"{[str(x.dtype) for x in exprs]}"
        )
    return tuple(exprs)


def add2(x, y) -> Expr:
    """Packed element-wise add, lane by lane: `x + y`."""
    x, y = _packed("add2", x, y)
    return E.Add(x.dtype, x, y)


def sub2(x, y) -> Expr:
    """Packed element-wise subtract: `x - y`."""
    x, y = _packed("sub2", x, y)
    return E.Sub(x.dtype, x, y)


def mul2(x, y) -> Expr:
    """Packed element-wise multiply: `x * y`."""
    x, y = _packed("mul2", x, y)
    return E.Mul(x.dtype, x, y)


def fma2(x, y, z) -> Expr:
    """Packed fused multiply-add: `x * y + z` of each lane, rounded once."""
    x, y, z = _packed("fma2", x, y, z)
    return E.Call(x.dtype, FMA, (x, y, z))


def max2(x, y) -> Expr:
    """Packed element-wise maximum (NaN-propagating, as T.max)."""
    x, y = _packed("max2", x, y)
    return E.Max(x.dtype, x, y)


def min2(x, y) -> Expr:
    """Packed element-wise minimum (NaN-propagating, as T.min)."""
    x, y = _packed("min2", x, y)
    return E.Min(x.dtype, x, y)


def abs2(x) -> Expr:
    """Packed element-wise absolute value."""
    (x,) = _packed("abs2", x)
    return E.Call(x.dtype, "abs", (x,))


# ---------------------------------------------------------------------------- lanes of a vector value


def lane(e: Expr, i: int) -> Expr:
    """Lane `i` of the vector value `e` as a scalar expression (a scalar `e` is the same in every lane)."""
    if lanes_of(e) == 1 and not _has_vector(e):
        return e
    scalar = e.dtype.element()
    if isinstance(e, E.Ramp):
        return e.base if i == 0 else E.add(e.base, E.mul(e.stride, i))
    if isinstance(e, E.Broadcast):
        return e.value
    if isinstance(e, E.IntImm):
        return E.IntImm(scalar, e.value)
    if isinstance(e, E.FloatImm):
        return E.FloatImm(scalar, e.value)
    if isinstance(e, E.BufferLoad):
        if not any(lanes_of(x) > 1 for x in e.indices):
            raise IRError(
                f"buffer {e.buffer.name} is {e.buffer.dtype}: buffers of vector dtypes are not supported"
            )
        return E.BufferLoad(scalar, e.buffer, tuple(lane(x, i) for x in e.indices))
    if isinstance(e, E.BinaryOp):
        return type(e)(scalar, lane(e.a, i), lane(e.b, i))
    if isinstance(e, E.Not):
        return E.Not(scalar, lane(e.a, i))
    if isinstance(e, E.Select):
        return E.Select(scalar, lane(e.condition, i), lane(e.true_value, i), lane(e.false_value, i))
    if isinstance(e, E.Cast):
        return E.cast(lane(e.value, i), scalar)
    if isinstance(e, E.Call) and e.op == VECTOR:
        return e.args[i]
    if isinstance(e, E.Call) and e.op in _ELEMENTWISE_CALLS:
        return E.Call(scalar, e.op, tuple(lane(a, i) for a in e.args))
    raise IRError(
        f"{type(e).__name__} of {e.dtype} has no per-lane form; vector values are loads at a "
        "T.Ramp index, T.Broadcast, element-wise arithmetic and the packed intrinsics (T.add2 ...)"
    )


def _has_vector(e: Expr) -> bool:
    """Whether an operand of `e` is a vector (a comparison of vectors is one, typed bool)."""
    if isinstance(e, E.BinaryOp):
        return lanes_of(e.a) > 1 or lanes_of(e.b) > 1
    if isinstance(e, (E.Call, E.Cast)):
        children = e.args if isinstance(e, E.Call) else (e.value,)
        return any(isinstance(c, Expr) and lanes_of(c) > 1 for c in children)
    return False


def vector_lanes(*exprs: Expr) -> int:
    """The lanes of a statement over `exprs`: 1 when all are scalars, else their one vector width."""
    widths = {lanes_of(x) for x in exprs if lanes_of(x) > 1 or _has_vector(x)}
    widths |= {max(lanes_of(c) for c in _operands(x)) for x in exprs if lanes_of(x) == 1 and _has_vector(x)}
    widths.discard(1)
    if len(widths) > 1:
        raise IRError(f"vector values of different widths ({sorted(widths)} lanes) meet in one statement")
    return widths.pop() if widths else 1


def _operands(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, E.BinaryOp):
        return (e.a, e.b)
    if isinstance(e, E.Call):
        return tuple(a for a in e.args if isinstance(a, Expr))
    if isinstance(e, E.Cast):
        return (e.value,)
    return ()


def reads_memory(e: Expr) -> bool:
    from tilecraft.ir.visitor import walk

    return any(isinstance(n, E.BufferLoad) for n in walk(e))


def store_lanes(buf: Buffer, indices: tuple[Expr, ...], value: Expr, span: Span | None) -> list:
    """The stores of a vector `value` at vector `indices` of `buf`, one per lane, as statement makers:
    each lane's value is bound first when they read memory, so that every lane reads before any lane
    writes (one vector store), whatever the buffers alias. A maker is a Stmt or a function of the body."""
    lanes = vector_lanes(*indices)
    if lanes == 1:
        raise IRError(
            f"a {value.dtype} value stored at one element of {buf.name}: a vector is stored at a vector index",
        )
    if lanes_of(value) not in (1, lanes) and vector_lanes(value) != lanes:
        raise IRError(f"a {value.dtype} value stored at {lanes} elements of {buf.name}")
    values = [E.cast(lane(value, i), buf.dtype) for i in range(lanes)]
    makers: list = []
    if lanes > 1 and any(reads_memory(v) for v in values):
        bound = []
        for i, v in enumerate(values):
            var = Var(v.dtype, f"lane{i}")
            makers.append(lambda body, var=var, v=v: S.LetStmt(var, v, body, span=span))
            bound.append(var)
        values = bound
    for i, v in enumerate(values):
        makers.append(S.BufferStore(buf, v, tuple(lane(x, i) for x in indices), span=span))
    return makers


def bind_lanes(name: str, value: Expr) -> tuple[list[tuple[Var, Expr]], Expr]:
    """A named vector: one immutable local per lane (each with its value) and the value the name stands
    for from then on (a `vector` of those locals)."""
    lanes = vector_lanes(value)
    locals_ = [(Var(lane(value, i).dtype, f"{name}_{i}"), lane(value, i)) for i in range(lanes)]
    dtype: DataType = as_dtype(value.dtype).element().with_lanes(lanes)
    return locals_, E.Call(dtype, VECTOR, tuple(var for var, _ in locals_))
