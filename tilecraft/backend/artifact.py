"""`CompiledArtifact`: the typed, frozen record between codegen and the execution backends.

Everything a launcher needs is a named field: device sources and binaries by format, host source and
its format, the kernel's parameters in order, symbolic dims, and per device kernel its symbol, ABI
parameter list, grid and block dims, dynamic shared memory and cluster dims. There is no dict of
unknown keys; backend-specific facts that no launcher reads go in `extra`, a tuple of pairs.

The records hold IR expressions, whose `==` builds IR, so they compare by identity (`eq=False`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from tilecraft.backend.errors import ArtifactError
from tilecraft.backend.formats import check_format, frozen_mapping

if TYPE_CHECKING:
    from tilecraft.backend.codegen import DeviceCode, HostCode
    from tilecraft.backend.target import Target
    from tilecraft.ir import DataType, Expr, PrimFunc, Var

PARAM_KINDS = ("buffer", "scalar")


@dataclass(frozen=True, eq=False)
class ParamInfo:
    """One parameter: a buffer (shape and stride expressions, memory scope) or a scalar (empty shape).

    `written`: whether the kernel may store into the buffer, so a call must pass writable memory (and a
    launcher that copies buffers must copy it back). Lowering computes it from the kernel; the default
    True is the safe assumption when nobody did. A scalar is passed by value: never written.
    """

    name: str
    kind: str
    dtype: DataType
    shape: tuple[Expr, ...] = ()
    strides: tuple[Expr, ...] = ()
    scope: str = ""
    written: bool = True

    def __post_init__(self) -> None:
        from tilecraft.ir.dtype import DataType

        if self.kind not in PARAM_KINDS:
            raise ArtifactError(f"parameter {self.name!r}: kind {self.kind!r} is not one of {PARAM_KINDS}")
        if not isinstance(self.dtype, DataType):
            raise ArtifactError(f"parameter {self.name!r}: dtype must be a DataType, got {self.dtype!r}")
        if self.kind == "scalar" and (self.shape or self.strides):
            raise ArtifactError(f"scalar parameter {self.name!r} cannot have a shape or strides")
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "strides", tuple(self.strides))
        object.__setattr__(self, "written", bool(self.written) and self.kind == "buffer")

    @staticmethod
    def from_param(param: Any, written: bool = True) -> ParamInfo:
        """From a PrimFunc parameter: a Buffer (`written`: whether the kernel may store into it) or a
        scalar Var."""
        from tilecraft.ir import Buffer, Var

        if isinstance(param, Buffer):
            return ParamInfo(
                param.name, "buffer", param.dtype, param.shape, param.strides, param.scope, written
            )
        if isinstance(param, Var):
            return ParamInfo(param.name, "scalar", param.dtype)
        raise ArtifactError(f"a kernel parameter must be a Buffer or a Var, got {type(param).__name__}")


@dataclass(frozen=True, eq=False)
class KernelInfo:
    """One device kernel: its symbol, ABI parameters in order, grid, block, shared memory, cluster."""

    symbol: str
    params: tuple[ParamInfo, ...]
    grid: tuple[Expr, ...]
    block: tuple[int, ...]
    dynamic_smem: int = 0
    cluster: tuple[int, ...] = (1, 1, 1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "grid", tuple(self.grid))
        object.__setattr__(self, "block", tuple(self.block))
        object.__setattr__(self, "cluster", tuple(self.cluster))
        if not self.symbol or not isinstance(self.symbol, str):
            raise ArtifactError(f"kernel symbol must be a non-empty string, got {self.symbol!r}")
        _check_dims(self.symbol, "block", self.block, max_len=3)
        _check_dims(self.symbol, "cluster", self.cluster, max_len=3)
        if not isinstance(self.dynamic_smem, int) or self.dynamic_smem < 0:
            raise ArtifactError(f"kernel {self.symbol}: dynamic_smem must be a byte count >= 0")


def _check_dims(symbol: str, what: str, dims: tuple[int, ...], max_len: int) -> None:
    if not 1 <= len(dims) <= max_len or any(not isinstance(d, int) or d < 1 for d in dims):
        raise ArtifactError(f"kernel {symbol}: {what} must be 1 to {max_len} positive ints, got {dims}")


@dataclass(frozen=True, eq=False)
class CompiledArtifact:
    """What codegen produced for one PrimFunc on one target."""

    function_name: str
    target: Target
    params: tuple[ParamInfo, ...]
    symbolic_dims: tuple[Var, ...]
    kernels: tuple[KernelInfo, ...]
    device_sources: Mapping[str, str] = field(default_factory=dict)
    device_binaries: Mapping[str, bytes] = field(default_factory=dict)
    host_source: str | None = None
    host_format: str | None = None
    ir_hash: str = ""
    extra: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        for name in ("params", "symbolic_dims", "kernels", "extra"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "device_sources", frozen_mapping(self.device_sources))
        object.__setattr__(self, "device_binaries", frozen_mapping(self.device_binaries))
        for fmt in (*self.device_sources, *self.device_binaries):
            check_format("CompiledArtifact", fmt)
        if (self.host_source is None) != (self.host_format is None):
            raise ArtifactError("CompiledArtifact: give host_source and host_format together, or neither")

    def __reduce__(self) -> tuple[Any, ...]:
        # Read-only mappings do not pickle; rebuild from plain dicts (exports pickle the artifact).
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["device_sources"] = dict(self.device_sources)
        values["device_binaries"] = dict(self.device_binaries)
        return (_rebuild_artifact, (values,))

    @property
    def formats(self) -> tuple[str, ...]:
        """Every format present: device sources, device binaries, then the host format."""
        host = (self.host_format,) if self.host_format else ()
        return (*self.device_sources, *self.device_binaries, *host)

    def source(self, fmt: str) -> str:
        """The device source in format `fmt` (or the host source if `fmt` is the host format)."""
        if fmt == self.host_format and self.host_source is not None:
            return self.host_source
        if fmt not in self.device_sources:
            raise ArtifactError(
                f"artifact of {self.function_name!r} has no source {fmt!r}; {self._available()}"
            )
        return self.device_sources[fmt]

    def binary(self, fmt: str) -> bytes:
        """The device binary in format `fmt`."""
        if fmt not in self.device_binaries:
            raise ArtifactError(
                f"artifact of {self.function_name!r} has no binary {fmt!r}; {self._available()}"
            )
        return self.device_binaries[fmt]

    def extra_value(self, key: str, default: Any = None) -> Any:
        return dict(self.extra).get(key, default)

    def _available(self) -> str:
        sources = [*self.device_sources, *([self.host_format] if self.host_format else [])]
        return (
            f"sources: {', '.join(sources) or 'none'}; binaries: {', '.join(self.device_binaries) or 'none'}"
        )

    @staticmethod
    def assemble(
        func: PrimFunc,
        target: Target,
        device: DeviceCode,
        host: HostCode | None,
        ir_hash: str,
        extra: tuple[tuple[str, Any], ...] = (),
        written: Sequence[bool] | None = None,
    ) -> CompiledArtifact:
        """The artifact of `func` from the outputs of device and host codegen; `written` says, per
        parameter of `func`, whether the kernel may store into it (None: assume every buffer is)."""
        flags = (True,) * len(func.params) if written is None else tuple(written)
        if len(flags) != len(func.params):
            raise ArtifactError(
                f"{func.name}: `written` has {len(flags)} entries for {len(func.params)} parameters"
            )
        return CompiledArtifact(
            function_name=func.name,
            target=target,
            params=tuple(ParamInfo.from_param(p, w) for p, w in zip(func.params, flags)),
            symbolic_dims=func.symbolic_dims,
            kernels=device.kernels,
            device_sources=device.sources,
            device_binaries=device.binaries,
            host_source=host.source if host else None,
            host_format=host.format if host else None,
            ir_hash=ir_hash,
            extra=extra,
        )


def _rebuild_artifact(values: dict[str, Any]) -> CompiledArtifact:
    return CompiledArtifact(**values)
