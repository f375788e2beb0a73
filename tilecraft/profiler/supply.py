"""Input arrays for a kernel's parameters, made from its signature (`TensorSupplyType`).

Values are drawn with numpy (every dtype, bfloat16 and float8 through ml_dtypes) and then placed where
the kernel reads them: the execution backend's `to_device` (the same array on the host, a GPU copy on a
GPU), and, when torch tensors are asked for on a host target, a torch view of the numpy data. The value
ranges follow TileLang's `get_tensor_supply`, so a tuning or a check sees the same kinds of numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any

import numpy as np

from tilecraft.errors import ArgumentError
from tilecraft.ir import expr as E
from tilecraft.ir.dtype import DataType, as_dtype, numpy_dtype, torch_bit_view
from tilecraft.ir.eval import evaluate

LIBRARIES = ("numpy", "torch")
# numpy storage of dtypes that torch.from_numpy cannot take; the tensor is viewed back as the dtype


class TensorSupplyType(Enum):
    """How `Profiler` fills a kernel's inputs (TileLang's names and numbers)."""

    Integer = 1
    """Small integers: -2..2 (0..2 unsigned, 0/1 for bool, -128..127 cast for float8)."""
    Uniform = 2
    """Uniform in [-1, 1) (int8: ones)."""
    Normal = 3
    """Normal with mean -1 and standard deviation 1, as TileLang draws it (int8: ones)."""
    Randn = 4
    """Standard normal."""
    Zero = 5
    One = 6
    Auto = 7
    """Uniform in [-1, 1) for float16/bfloat16/float32, small integers otherwise."""


def as_supply_type(value: Any) -> TensorSupplyType:
    """A TensorSupplyType from itself or its name; the error lists the names."""
    if isinstance(value, TensorSupplyType):
        return value
    if isinstance(value, str) and value in TensorSupplyType.__members__:
        return TensorSupplyType[value]
    names = ", ".join(TensorSupplyType.__members__)
    raise ArgumentError(f"tensor_supply_type must be a TensorSupplyType ({names}), got {value!r}")


def _integers(dtype: DataType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype.is_uint:
        low, high = 0, 3
    elif dtype.is_bool:
        low, high = 0, 2
    elif dtype.kind == "float8":
        low, high = -128, 128
    elif dtype.name == "float8_e8m0fnu":  # positive powers of two (zero and below are its NaN)
        low, high = 1, 5
    else:
        low, high = -2, 3
    return rng.integers(low, high, size=shape).astype(numpy_dtype(dtype))


def supply_numpy(
    dtype: DataType, shape: tuple[int, ...], kind: TensorSupplyType, rng: np.random.Generator
) -> np.ndarray:
    """A host array of `dtype` and `shape` filled as `kind` says; for a packed 4-bit dtype, the bytes
    that hold such values (shape (..., ceil(N / 2)), two a byte: what kernels take on every device)."""
    values = _values(dtype, shape, kind, rng)
    if dtype.is_packed and shape:
        from tilecraft.runtime.packed import pack

        return pack(values)
    return values


def _values(
    dtype: DataType, shape: tuple[int, ...], kind: TensorSupplyType, rng: np.random.Generator
) -> np.ndarray:
    target = numpy_dtype(dtype)
    if kind is TensorSupplyType.Zero:
        return np.zeros(shape, target)
    if kind is TensorSupplyType.One:
        return np.ones(shape, target)
    if kind is TensorSupplyType.Auto:
        auto_float = dtype.name in ("float16", "bfloat16", "float32")
        kind = TensorSupplyType.Uniform if auto_float else TensorSupplyType.Integer
    if kind is TensorSupplyType.Integer:
        return _integers(dtype, shape, rng)
    if dtype.name == "int8":  # TileLang's choice: random floats mean nothing in int8
        return np.ones(shape, target)
    if kind is TensorSupplyType.Uniform:
        values = rng.uniform(-1.0, 1.0, size=shape)
    elif kind is TensorSupplyType.Normal:
        values = rng.normal(-1.0, 1.0, size=shape)
    else:
        values = rng.standard_normal(size=shape)
    return values.astype(np.float32).astype(target)


def concrete_shape(
    name: str, shape: Sequence[E.Expr], dims: Mapping[str, int], symbols: Sequence[E.Var]
) -> tuple[int, ...]:
    """The sizes of a parameter's shape, with symbolic dims taken from `dims` (name -> size)."""
    env = {v: int(dims[v.name]) for v in symbols if v.name in dims}
    sizes = []
    for axis, e in enumerate(shape):
        value = E.const_value(e)
        if not isinstance(value, int):
            try:
                value = int(evaluate(e, env))
            except (KeyError, ValueError):
                raise ArgumentError(_unbound_message(name, axis, e, symbols, dims)) from None
        sizes.append(value)
    return tuple(sizes)


def _unbound_message(name: str, axis: int, e: E.Expr, symbols: Sequence[E.Var], dims: Mapping) -> str:
    missing = sorted(v.name for v in symbols if v.name not in dims) or ["?"]
    example = ", ".join(f"{m!r}: <size>" for m in missing)
    return (
        f"parameter {name!r}: shape[{axis}] is {e}, a symbolic dim, so its size is not known; pass "
        f"dynamic_symbolic_constraints={{{example}}} (sizes by dim name) or input_tensors=[...]"
    )


def torch_from_numpy(array: np.ndarray) -> Any:
    """A torch tensor sharing `array`'s data (bfloat16 and float8 through an integer view)."""
    import torch

    view = torch_bit_view(as_dtype(array.dtype))
    if view is None:
        return torch.from_numpy(array)
    return torch.from_numpy(array.view(view)).view(as_dtype(array.dtype).as_torch())


def is_torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def to_numpy(x: Any, to_host: Callable[[Any], Any]) -> np.ndarray:
    """A numpy copy of any output: torch tensors on any device (bfloat16 and float8 included), numpy
    arrays, scalars, else the execution backend's `to_host`."""
    if is_torch_tensor(x):
        import torch

        dtype = as_dtype(x.dtype)
        view = torch_bit_view(dtype)
        if view is None:
            return x.detach().numpy(force=True)
        bits = x.detach().view(getattr(torch, view)).numpy(force=True)
        return bits.view(numpy_dtype(dtype))
    if isinstance(x, (np.ndarray, np.generic, int, float, bool)):
        return np.asarray(x)
    return np.asarray(to_host(x))


def default_library() -> str:
    """torch when the program already imported it (TileLang code does), else numpy."""
    return "torch" if "torch" in sys.modules else "numpy"


def check_library(library: str | None) -> str:
    if library is None:
        return default_library()
    if library not in LIBRARIES:
        raise ArgumentError(f"library must be one of {', '.join(LIBRARIES)} or None, got {library!r}")
    return library
