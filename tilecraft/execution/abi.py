"""What every launcher shares about a device kernel's arguments: where each comes from (a kernel's
parameters, its `KernelInfo.params` in ABI order, name the function's parameters or symbolic dims, and
every launcher resolves them the same way, by name and kind), and how a scalar is passed by value.

A scalar is packed as the C type of its dtype (`SCALAR_CODES`, struct codes: `bool` as a 32-bit int,
`float16` and `bfloat16` as `float`); the checked path has already refused values of the wrong kind
or out of an integer dtype's range (runtime/scalars.py), so a value that still does not pack (a finite
float beyond float32's range) is named by `bad_scalar`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo, ParamInfo

SCALAR_CODES = {
    "bool": "i", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint8": "B", "uint16": "H", "uint32": "I", "uint64": "Q",
    "float16": "f", "bfloat16": "f", "float32": "f", "float64": "d",
}  # fmt: skip
PACK_ERRORS = (struct.error, TypeError, OverflowError, ValueError)


@dataclass(frozen=True)
class ArgSource:
    """Function parameter `index` (kind "buffer" or "scalar"), or symbolic dim `index` (kind "dim")."""

    kind: str
    index: int


def arg_source(param: ParamInfo, artifact: CompiledArtifact, symbol: str) -> ArgSource:
    """The function parameter or symbolic dim kernel `symbol`'s parameter `param` names, of the same kind;
    TilecraftError naming the kernel and what it could have named otherwise."""
    for i, p in enumerate(artifact.params):
        if p.name == param.name:
            if p.kind != param.kind:
                raise TilecraftError(
                    f"kernel {symbol}: parameter {param.name!r} is a {param.kind} but the function's "
                    f"parameter of that name is a {p.kind}"
                )
            return ArgSource(p.kind, i)
    for j, var in enumerate(artifact.symbolic_dims):
        if var.name == param.name and param.kind == "scalar":
            return ArgSource("dim", j)
    known = [p.name for p in artifact.params] + [v.name for v in artifact.symbolic_dims]
    raise TilecraftError(
        f"kernel {symbol}: parameter {param.name!r} is neither a parameter nor a symbolic dim of "
        f"{artifact.function_name} (known: {', '.join(known) or 'none'})"
    )


def scalar_names(artifact: CompiledArtifact) -> list[str]:
    """The function's scalar parameters, in order: what grid expressions may name besides the dims."""
    return [p.name for p in artifact.params if p.kind == "scalar"]


def plain_value(value: Any) -> Any:
    """numpy and torch scalars (and 0-d arrays) as Python numbers; bools as ints."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    return int(value) if isinstance(value, bool) else value


def bad_scalar(params: Sequence[ParamInfo], values: Sequence[Any], codes: Sequence[str], symbol: str) -> None:
    """Raise an ArgumentError naming the first of kernel `symbol`'s scalar `params` whose value does not
    pack as its struct code; return when every one does."""
    for param, value, code in zip(params, values, codes):
        try:
            struct.pack("<" + code, value)
        except PACK_ERRORS as err:
            raise ArgumentError(
                f"kernel {symbol}: parameter {param.name!r} ({param.dtype}) cannot take {value!r}: {err}"
            ) from None


def work_groups(grid: Callable[[Sequence[Any], Sequence[int]], tuple[int, ...]], scalars: Sequence[Any],
                dims: Sequence[int], symbol: str) -> tuple[int, ...]:  # fmt: skip
    """The groups per dim of kernel `symbol`'s grid function (`grid.grid_function`) for a call's scalars and
    dims; an ArgumentError if a dim is negative (0: the kernel launches nothing)."""
    groups = tuple(int(g) for g in grid(scalars, dims))
    if any(g < 0 for g in groups):
        raise ArgumentError(f"kernel {symbol}: grid {groups} has a negative dim; check the sizes of the arguments")
    return groups


def scalar_code(param: ParamInfo, symbol: str, codes: Mapping[str, str], which: str) -> str:
    """The code `codes` gives scalar `param`'s dtype; otherwise a TilecraftError saying that its dtype is
    one `which` ("a Metal kernel cannot take") and which dtypes are supported."""
    code = codes.get(param.dtype.name)
    if code is None or param.dtype.lanes != 1:
        raise TilecraftError(
            f"kernel {symbol}: scalar parameter {param.name!r} has dtype {param.dtype}, which {which}; "
            f"supported: {', '.join(codes)}"
        )
    return code


def check_kernels(artifact: CompiledArtifact, check_kernel: Callable[[KernelInfo], None],
                  check_scalar: Callable[[ParamInfo, str], object]) -> None:  # fmt: skip
    """Launch metadata every kernel must satisfy, checked before anything is built or loaded: there is a
    kernel; each passes the backend's `check_kernel` (its grid and block limits); each of its parameters
    names a function parameter or symbolic dim (`arg_source`), each scalar passes `check_scalar(param,
    symbol)`; its grid is a function of the scalar parameters and symbolic dims."""
    from tilecraft.execution.grid import grid_function

    if not artifact.kernels:
        raise TilecraftError(f"artifact of {artifact.function_name} has no kernels to launch")
    for info in artifact.kernels:
        check_kernel(info)
        for param in info.params:
            arg_source(param, artifact, info.symbol)
            if param.kind == "scalar":
                check_scalar(param, info.symbol)
        grid_function(info.grid, scalar_names(artifact), artifact.symbolic_dims)
