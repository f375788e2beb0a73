"""Parameter annotations and symbols: `T.Tensor`, `T.StridedTensor`, `T.dynamic`, `T.const`, `T.empty`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tilecraft.ir import dtype as dt
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import DataType
from tilecraft.ir.expr import Expr, IntImm, IRError, Var, convert
from tilecraft.language import builder
from tilecraft.language.views import tensor_view


def _dims(shape) -> tuple[Expr, ...]:
    if isinstance(shape, (int, Expr)):
        shape = (shape,)
    dims = []
    for s in shape:
        if isinstance(s, (Buffer, str)) or s is None:
            raise IRError(f"tensor dimension {s!r} must be an integer or a symbolic dim (T.dynamic)")
        dim = convert(s)
        if not dim.dtype.is_integer:
            raise IRError(f"tensor dimension {s} has dtype {dim.dtype}; dims must be integers")
        if isinstance(dim, IntImm) and dim.value < 0:
            raise IRError(
                f"tensor dimension {dim.value} is negative; dims must be >= 0 (0 is an empty tensor)"
            )
        dims.append(dim)
    return tuple(dims)


@dataclass(frozen=True)
class TensorType:
    """The type of a tensor parameter; the parser turns it into a Buffer named after the parameter."""

    shape: tuple[Expr, ...]
    dtype: DataType
    strides: tuple[Expr, ...] = ()
    scope: str = "global"
    tf32: bool = False  # declared T.tfloat32 (Buffer.tf32); dtype is then float32

    @staticmethod
    def of(
        shape: tuple[Expr, ...], dtype, strides: tuple[Expr, ...] = (), scope: str = "global"
    ) -> TensorType:
        """The type of a tensor declared with `dtype` as written (T.tfloat32 is float32 with `tf32`)."""
        return TensorType(shape, dt.as_dtype(dtype), strides, scope, dt.is_tfloat32(dtype))

    def to_buffer(self, name: str) -> Buffer:
        return Buffer(name, self.shape, self.dtype, self.scope, self.strides, tf32=self.tf32)


@dataclass(frozen=True)
class InvalidTensorType:
    """A tensor annotation that failed while Python defined the function.

    Python evaluates annotations before the parser runs, where no kernel position is known; the parser
    reports the error at the parameter's annotation.
    """

    error: Exception


def _tensor_type(make) -> TensorType | InvalidTensorType:
    try:
        return make()
    except (IRError, ValueError, TypeError) as exc:
        if builder.active() is not None:
            raise
        return InvalidTensorType(exc)


class _TensorFactory:
    """`T.Tensor((M, N), dtype)` or `T.Tensor[[M, N], dtype]`: a dense row-major tensor parameter.

    In a kernel body, `T.Tensor(shape, dtype, A.data)` is a view: `shape` over the memory of the tensor
    or tile `A` (tilecraft/language/views.py)."""

    def __call__(self, shape, dtype="float32", data=None) -> TensorType | Buffer:
        if data is not None:
            return tensor_view(_dims(shape), dtype, data)
        return _tensor_type(lambda: TensorType.of(_dims(shape), dtype))

    def __getitem__(self, key) -> TensorType:
        return _tensor_type(lambda: _subscripted(key))


def _subscripted(key) -> TensorType:
    if not isinstance(key, tuple) or len(key) != 2:
        raise IRError("write T.Tensor[[M, N], dtype]")
    return TensorType.of(_dims(key[0]), key[1])


Tensor = _TensorFactory()


class _OnChipBufferType:
    """`T.SharedBuffer(shape, dtype)` (or `[shape, dtype]`), `T.FragmentBuffer`, `T.LocalBuffer`:
    TileLang's annotations of a macro parameter that receives an on-chip buffer. As in TileLang they
    document the argument and change nothing: a macro binds its parameters to what the call passes
    (the parser never reads a macro's annotations). A kernel's own parameters are global tensors, so
    on a kernel parameter they are a located error (parser/core.py)."""

    def __init__(self, name: str, scope: str) -> None:
        self.name, self.scope = name, scope

    def __call__(self, shape, dtype="float32", *_args, **_kwargs) -> TensorType | InvalidTensorType:
        return _tensor_type(lambda: TensorType.of(_dims(shape), dtype, scope=self.scope))

    def __getitem__(self, key) -> TensorType | InvalidTensorType:
        if not isinstance(key, tuple) or len(key) != 2:
            return InvalidTensorType(IRError(f"write T.{self.name}[[M, N], dtype]"))
        return self(*key)

    def __repr__(self) -> str:
        return f"T.{self.name}"


SharedBuffer = _OnChipBufferType("SharedBuffer", "shared.dyn")
FragmentBuffer = _OnChipBufferType("FragmentBuffer", "local.fragment")
LocalBuffer = _OnChipBufferType("LocalBuffer", "local")

ON_CHIP_ANNOTATIONS = {b.scope: b.name for b in (SharedBuffer, FragmentBuffer, LocalBuffer)}


class _StridedTensorFactory:
    """`T.StridedTensor(shape, strides, dtype)` or `T.StridedTensor[shape, strides, dtype]`: a tensor
    parameter with explicit element strides (symbolic strides are bound per call)."""

    def __call__(self, shape, strides, dtype="float32") -> TensorType | InvalidTensorType:
        return _tensor_type(lambda: _strided(shape, strides, dtype))

    def __getitem__(self, key) -> TensorType | InvalidTensorType:
        if not isinstance(key, tuple) or len(key) != 3:
            return InvalidTensorType(IRError("write T.StridedTensor[[M, N], [stride_m, stride_n], dtype]"))
        return self(*key)

    def __repr__(self) -> str:
        return "T.StridedTensor"


StridedTensor = _StridedTensorFactory()


def _strided(shape, strides, dtype) -> TensorType:
    shape, strides = _dims(shape), _dims(strides)
    if len(shape) != len(strides):
        raise IRError(f"StridedTensor has {len(shape)} dims but {len(strides)} strides")
    return TensorType.of(shape, dtype, strides)


def _names(names: str | Sequence[str]) -> list[str]:
    if isinstance(names, str):
        names = [n.strip() for n in names.replace(" ", ",").split(",")]
    return [n for n in names if n]


class _SymbolicVarType(type):
    """`isinstance(x, T.Var)` holds for every symbolic variable: tilecraft's `Var`, whose constructor
    takes (dtype, name) where TVM's takes (name, dtype)."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Var)

    def __subclasscheck__(cls, sub) -> bool:
        return isinstance(sub, type) and issubclass(sub, Var)


class SymbolicVar(metaclass=_SymbolicVarType):
    """TVM's `Var` as TileLang spells it, `T.Var`: the class of symbolic variables (T.dynamic's, a loop's)
    for `isinstance`, and `T.Var(name, dtype="int32")` makes one (a symbolic dim, like T.dynamic)."""

    def __new__(cls, name: str, dtype="int32", span=None) -> Var:  # noqa: ARG003 - TVM's signature
        return Var(dt.as_dtype(dtype), str(name))


def dynamic(names: str | Sequence[str], dtype="int32") -> Var | tuple[Var, ...]:
    """Symbolic dims, bound from the actual array shapes at each call: `M, N = T.dynamic("M, N")`."""
    dtype = dt.as_dtype(dtype)
    if not dtype.is_integer:
        raise IRError(f"dynamic dims must have an integer dtype, got {dtype}")
    variables = tuple(Var(dtype, n) for n in _names(names))
    if not variables:
        raise IRError("T.dynamic needs at least one name")
    return variables[0] if len(variables) == 1 else variables


symbolic = dynamic


def const(names: str | Sequence[str], dtype="int32") -> Var | tuple[Var, ...]:
    """Compile-time symbols (eager style): specialized to their values at each distinct call."""
    result = dynamic(names, dtype)
    b = builder.active()
    if b is not None:
        b.consts.extend(result if isinstance(result, tuple) else (result,))
    return result


def empty(shape, dtype="float32") -> Buffer:
    """An output tensor allocated by the call (eager style); return it from the kernel function."""
    b = builder.current("T.empty")
    buf = Buffer(f"out{len(b.outputs)}", b.parser.without_lets(_dims(shape)), dt.as_dtype(dtype),
                 tf32=dt.is_tfloat32(dtype))  # fmt: skip
    b.outputs.append(buf)
    return buf
