"""`CompiledArtifact`: the typed, frozen record between codegen and the execution backends.

Everything a launcher needs is a named field: device sources and binaries by format, host source and
its format, the kernel's parameters in order, symbolic dims, the alignment the device code assumes of
buffer arguments, and per device kernel its symbol, ABI parameter list, grid and block dims, dynamic
shared memory and tensor maps. There is no dict of
unknown keys; backend-specific facts that no launcher reads go in `extra`, a tuple of pairs.

The records hold IR expressions, whose `==` builds IR, so they compare by identity (`eq=False`).

On disk (the kernel cache, exports) an artifact is plain data that cannot run code when read back:
`artifact_files` writes `artifact.json` plus one file per source and binary, and `artifact_from_files`
reads them back into an equivalent artifact, validating every value against the record's type hints.
The codec walks the dataclass fields, so a field added to a record is stored without codec changes as
long as its type is one the codec knows (str, int, float, bool, None, DataType, Expr, Var, Target,
tuples of those, or the records themselves).
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

from tilecraft.backend.errors import ArtifactError
from tilecraft.backend.formats import check_format, frozen_mapping
from tilecraft.errors import BackendError

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
    `workspace`: a global scratch buffer the kernel allocated itself (`T.alloc_global`); the caller does
    not pass it: each call allocates it. Workspace parameters come last.
    `pointer`: a scalar that is an address (`T.ptr`): a call passes an int, or an array whose data
    address is passed.
    """

    name: str
    kind: str
    dtype: DataType
    shape: tuple[Expr, ...] = ()
    strides: tuple[Expr, ...] = ()
    scope: str = ""
    written: bool = True
    workspace: bool = False
    pointer: bool = False

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
        if self.workspace and self.kind != "buffer":
            raise ArtifactError(f"parameter {self.name!r}: only a buffer can be a workspace")
        if self.pointer and self.kind != "scalar":
            raise ArtifactError(f"parameter {self.name!r}: only a scalar can be an address")

    @staticmethod
    def from_param(param: Any, written: bool = True, workspace: bool = False, pointer: bool = False) -> ParamInfo:
        """From a PrimFunc parameter: a Buffer (`written`: whether the kernel may store into it;
        `workspace`: whether each call allocates it) or a scalar Var (`pointer`: a T.ptr address)."""
        from tilecraft.ir import Buffer, Var

        if isinstance(param, Buffer):
            return ParamInfo(
                param.name, "buffer", param.dtype, param.shape, param.strides, param.scope, written, workspace
            )
        if isinstance(param, Var):
            return ParamInfo(param.name, "scalar", param.dtype, pointer=pointer)
        raise ArtifactError(f"a kernel parameter must be a Buffer or a Var, got {type(param).__name__}")


TENSOR_MAP_SWIZZLES = (0, 32, 64, 128)
TENSOR_MAP_MAX_RANK = 5


@dataclass(frozen=True, eq=False)
class TensorMapInfo:
    """A tiled tensor map (a TMA descriptor) the kernel takes by value after its params, encoded by the
    launcher for each call from the buffer parameter `buffer`'s pointer, shape and strides.

    `box` is the tile one load moves, in elements, innermost dim first (the driver's order), one entry
    per dim of the buffer; `swizzle` the shared-memory swizzle span in bytes (0: none). Elements past
    the tensor's edge read as zero. `shape`: the row-major dims the map describes over the buffer's
    memory when they are not the buffer's own (a view, `T.Tensor(shape, dtype, A.data)`), outermost
    first; empty: the buffer's shape.
    """

    buffer: str
    dtype: DataType
    box: tuple[int, ...]
    swizzle: int = 0
    shape: tuple[Expr, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "box", tuple(self.box))
        object.__setattr__(self, "shape", tuple(self.shape))
        if self.shape and len(self.shape) != len(self.box):
            raise ArtifactError(f"tensor map of {self.buffer!r}: shape {self.shape} and box {self.box} differ in rank")
        if not 1 <= len(self.box) <= TENSOR_MAP_MAX_RANK or any(
            not isinstance(b, int) or b < 1 for b in self.box
        ):
            raise ArtifactError(f"tensor map of {self.buffer!r}: box {self.box} must be 1 to 5 positive ints")
        if self.swizzle not in TENSOR_MAP_SWIZZLES:
            raise ArtifactError(
                f"tensor map of {self.buffer!r}: swizzle {self.swizzle} is not one of {TENSOR_MAP_SWIZZLES}"
            )


@dataclass(frozen=True, eq=False)
class KernelInfo:
    """One device kernel: its symbol, ABI parameters in order, grid, block, shared memory, the tensor
    maps it takes after its parameters, and its thread-block cluster (x, y, z blocks; (1, 1, 1): none),
    along whose dims the grid must divide.

    `bounds_sites`: for a bounds-checked kernel whose runtime reads the report back (not the host C
    target, whose library holds its own table), what each of its checked accesses names
    (`buffer X at file:line:col: source`); the module's site numbers run through its kernels in order,
    from 1."""

    symbol: str
    params: tuple[ParamInfo, ...]
    grid: tuple[Expr, ...]
    block: tuple[int, ...]
    dynamic_smem: int = 0
    tensor_maps: tuple[TensorMapInfo, ...] = ()
    cluster: tuple[int, ...] = (1, 1, 1)
    bounds_sites: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "bounds_sites", tuple(self.bounds_sites))
        object.__setattr__(self, "tensor_maps", tuple(self.tensor_maps))
        buffers = {p.name for p in self.params if p.kind == "buffer"}
        for tm in self.tensor_maps:
            if tm.buffer not in buffers:
                raise ArtifactError(
                    f"kernel {self.symbol}: tensor map of {tm.buffer!r}, which is not a buffer parameter"
                )
        object.__setattr__(self, "grid", tuple(self.grid))
        object.__setattr__(self, "block", tuple(self.block))
        if not self.symbol or not isinstance(self.symbol, str):
            raise ArtifactError(f"kernel symbol must be a non-empty string, got {self.symbol!r}")
        _check_dims(self.symbol, "block", self.block, max_len=3)
        object.__setattr__(self, "cluster", tuple(self.cluster))
        _check_dims(self.symbol, "cluster", self.cluster, max_len=3)
        if len(self.cluster) != 3:
            raise ArtifactError(f"kernel {self.symbol}: cluster must be 3 positive ints, got {self.cluster}")
        if not isinstance(self.dynamic_smem, int) or self.dynamic_smem < 0:
            raise ArtifactError(f"kernel {self.symbol}: dynamic_smem must be a byte count >= 0")


def _check_dims(symbol: str, what: str, dims: tuple[int, ...], max_len: int) -> None:
    if not 1 <= len(dims) <= max_len or any(not isinstance(d, int) or d < 1 for d in dims):
        raise ArtifactError(f"kernel {symbol}: {what} must be 1 to {max_len} positive ints, got {dims}")


@dataclass(frozen=True, eq=False)
class CompiledArtifact:
    """What codegen produced for one PrimFunc on one target.

    `buffer_alignment`: the byte alignment (a power of two; 1: none) the device code assumes of every
    buffer argument's address, as codegen reported it; a call whose buffer lacks it is refused (the
    JIT's full path) or missed (its fast path).
    """

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
    buffer_alignment: int = 1

    def __post_init__(self) -> None:
        align = self.buffer_alignment
        if isinstance(align, bool) or not isinstance(align, int) or align < 1 or align & (align - 1):
            raise ArtifactError(
                f"CompiledArtifact: buffer_alignment must be a power of two >= 1, got {align!r}"
            )
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
        from tilecraft.ir.buffer import Buffer
        from tilecraft.ir.function import POINTER_PARAMS_ATTR, WORKSPACE_ATTR

        workspaces = set(func.attr(WORKSPACE_ATTR, ()) or ())
        pointers = set(func.attr(POINTER_PARAMS_ATTR, ()) or ())
        if len(flags) != len(func.params):
            raise ArtifactError(
                f"{func.name}: `written` has {len(flags)} entries for {len(func.params)} parameters"
            )
        return CompiledArtifact(
            function_name=func.name,
            target=target,
            params=tuple(
                ParamInfo.from_param(p, w, i in workspaces, not isinstance(p, Buffer) and p.name in pointers)
                for i, (p, w) in enumerate(zip(func.params, flags))
            ),
            symbolic_dims=func.symbolic_dims,
            kernels=device.kernels,
            device_sources=device.sources,
            device_binaries=device.binaries,
            host_source=host.source if host else None,
            host_format=host.format if host else None,
            ir_hash=ir_hash,
            extra=extra,
            buffer_alignment=device.buffer_alignment,
        )


def _rebuild_artifact(values: dict[str, Any]) -> CompiledArtifact:
    return CompiledArtifact(**values)


# ---------------------------------------------------------------- the on-disk form (JSON + code files)

ARTIFACT_JSON = "artifact.json"
_DOC_FORMAT = "tilecraft-artifact"
_DOC_VERSION = 5  # 2: `buffer_alignment` added, KernelInfo's unused `cluster` removed; 3: KernelInfo.cluster;
# 4: KernelInfo.bounds_sites; 5: ParamInfo.pointer
_SOURCE_PREFIX = "artifact.source."
_BINARY_PREFIX = "artifact.binary."
_HOST_FILE = "artifact.host-source"
_CODE_FIELDS = ("device_sources", "device_binaries", "host_source")


class ArtifactDecodeError(ArtifactError):
    """Stored artifact data is not a valid artifact (truncated, garbage, or values of the wrong type)."""


def artifact_files(artifact: CompiledArtifact) -> dict[str, bytes]:
    """`artifact` as files: `artifact.json` (everything but the code) and one file per source/binary."""
    from tilecraft.ir.serialize import ExprEncodeError, ExprEncoder

    encoder = ExprEncoder()
    try:
        values = {
            f.name: _encode(getattr(artifact, f.name), hint, encoder, f.name)
            for f in fields(artifact) if f.name not in _CODE_FIELDS
            for hint in (_hints(CompiledArtifact)[f.name],)
        }  # fmt: skip
    except ExprEncodeError as err:
        raise ArtifactError(f"artifact of {artifact.function_name!r} cannot be stored: {err}") from None
    doc = {
        "format": _DOC_FORMAT, "version": _DOC_VERSION, "vars": encoder.var_table(), "fields": values,
        "device_sources": sorted(artifact.device_sources), "device_binaries": sorted(artifact.device_binaries),
        "host_source": artifact.host_source is not None,
    }  # fmt: skip
    files = {ARTIFACT_JSON: json.dumps(doc, sort_keys=True).encode()}
    files.update({_SOURCE_PREFIX + fmt: text.encode() for fmt, text in artifact.device_sources.items()})
    files.update({_BINARY_PREFIX + fmt: bytes(data) for fmt, data in artifact.device_binaries.items()})
    if artifact.host_source is not None:
        files[_HOST_FILE] = artifact.host_source.encode()
    return files


def artifact_from_files(read: Callable[[str], bytes]) -> CompiledArtifact:
    """The artifact stored by `artifact_files`; `read(name)` returns a file's bytes.

    Raises ArtifactDecodeError (saying what is wrong) for anything that is not a valid artifact: a
    missing file, invalid JSON or UTF-8, an unknown format version, a value of the wrong type.
    """
    from tilecraft.ir.serialize import ExprDecodeError, ExprDecoder

    try:
        doc = json.loads(_read(read, ARTIFACT_JSON))
        _check_doc(doc)
        decoder = ExprDecoder(doc["vars"])
        values = {name: _decode(value, _hints(CompiledArtifact)[name], decoder, name)
                  for name, value in _exact_keys(doc["fields"], _record_fields(CompiledArtifact, _CODE_FIELDS),
                                                 "artifact").items()}  # fmt: skip
        values["device_sources"] = {fmt: _text(read, _SOURCE_PREFIX + fmt) for fmt in doc["device_sources"]}
        values["device_binaries"] = {fmt: _read(read, _BINARY_PREFIX + fmt) for fmt in doc["device_binaries"]}
        values["host_source"] = _text(read, _HOST_FILE) if doc["host_source"] else None
        return CompiledArtifact(**values)
    except ArtifactDecodeError as err:
        raise ArtifactDecodeError(f"stored artifact is invalid: {err}") from None
    except (ValueError, TypeError, ExprDecodeError, RecursionError, BackendError) as err:
        # json and UTF-8 errors are ValueErrors; the records' own checks raise ArtifactError (a BackendError).
        raise ArtifactDecodeError(f"stored artifact is invalid: {type(err).__name__}: {err}") from None


def _read(read: Callable[[str], bytes], name: str) -> bytes:
    try:
        data = read(name)
    except (OSError, BackendError) as err:
        raise ArtifactDecodeError(f"stored artifact lacks {name}: {err}") from None
    if not isinstance(data, bytes):
        raise ArtifactDecodeError(f"stored artifact file {name} is not bytes")
    return data


def _text(read: Callable[[str], bytes], name: str) -> str:
    return _read(read, name).decode("utf-8")


def _check_doc(doc: Any) -> None:
    if not isinstance(doc, dict) or doc.get("format") != _DOC_FORMAT:
        raise ArtifactDecodeError(f"{ARTIFACT_JSON} is not a tilecraft artifact")
    if doc.get("version") != _DOC_VERSION:
        raise ArtifactDecodeError(
            f"{ARTIFACT_JSON} has format version {doc.get('version')!r}, not {_DOC_VERSION}"
        )
    _exact_keys(doc, {"format", "version", "vars", "fields", "device_sources", "device_binaries",
                      "host_source"}, ARTIFACT_JSON)  # fmt: skip
    for key in ("device_sources", "device_binaries"):
        formats = doc[key]
        if not isinstance(formats, list) or not all(isinstance(f, str) for f in formats):
            raise ArtifactDecodeError(f"{ARTIFACT_JSON}: {key} must be a list of format names")
        for fmt in formats:
            check_format(ARTIFACT_JSON, fmt)
    if not isinstance(doc["host_source"], bool):
        raise ArtifactDecodeError(f"{ARTIFACT_JSON}: host_source must be true or false")


def _record_fields(cls: type, skip: tuple[str, ...] = ()) -> set[str]:
    return {f.name for f in fields(cls) if f.init and f.name not in skip}


def _exact_keys(data: Any, expected: set[str], where: str) -> dict[str, Any]:
    if not isinstance(data, dict) or set(data) != expected:
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ArtifactDecodeError(f"{where} must have exactly the keys {sorted(expected)}, got {got}")
    return data


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    from tilecraft.backend.target import Target
    from tilecraft.ir import DataType, Expr, Var

    names = {"DataType": DataType, "Expr": Expr, "Var": Var, "Target": Target, "ParamInfo": ParamInfo,
             "KernelInfo": KernelInfo, "TensorMapInfo": TensorMapInfo}  # fmt: skip
    return typing.get_type_hints(cls, localns=names)


_SCALARS = (str, int, float, bool)


def _encode(value: Any, hint: Any, encoder: Any, where: str) -> Any:
    """The JSON form of `value`, which must have type `hint`."""
    from tilecraft.backend.target import Target
    from tilecraft.ir import DataType, Expr

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return _encode_any(value, where)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        return _encode(value, next(a for a in args if a is not type(None)), encoder, where)
    if origin is tuple:
        items = args[:1] * len(value) if args[-1:] == (Ellipsis,) else args
        if not isinstance(value, tuple) or len(items) != len(value):
            raise ArtifactError(f"artifact field {where} must be a {hint}, got {value!r:.80}")
        return [_encode(v, h, encoder, f"{where}[{i}]") for i, (v, h) in enumerate(zip(value, items))]
    if hint in _SCALARS and type(value) is hint:
        return value
    if hint is DataType and isinstance(value, DataType):
        return str(value)
    if isinstance(hint, type) and issubclass(hint, Expr) and isinstance(value, hint):
        return encoder.encode(value)
    if hint is Target and isinstance(value, Target):
        return {"kind": value.kind, "attrs": [list(pair) for pair in value.attrs]}
    if is_dataclass(hint) and isinstance(value, hint):
        return {f.name: _encode(getattr(value, f.name), _hints(hint)[f.name], encoder, f"{where}.{f.name}")
                for f in fields(hint) if f.init}  # fmt: skip
    raise ArtifactError(f"artifact field {where} must be a {hint}, got {type(value).__name__} {value!r:.80}")


def _encode_any(value: Any, where: str) -> Any:
    """Free-form `extra` values: None, bool, int, float, str, and tuples and lists of them."""
    if value is None or type(value) in _SCALARS:
        return value
    if isinstance(value, tuple):
        return [_encode_any(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, list):  # tagged, so a list comes back as a list (the content hash reprs `extra`)
        return {"list": [_encode_any(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    raise ArtifactError(
        f"artifact field {where} holds a {type(value).__name__}; extra values must be None, bool, int, float, "
        "str, or tuples and lists of them, so that they can be stored as JSON"
    )


def _decode(data: Any, hint: Any, decoder: Any, where: str) -> Any:
    """The value of type `hint` that `data` encodes; ArtifactDecodeError naming `where` otherwise."""
    from tilecraft.backend.target import Target
    from tilecraft.ir import DataType, Expr, Var
    from tilecraft.ir.serialize import decode_dtype

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return _decode_any(data, where)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        return _decode(data, next(a for a in args if a is not type(None)), decoder, where)
    if origin is tuple:
        if not isinstance(data, list) or (args[-1:] != (Ellipsis,) and len(args) != len(data)):
            raise ArtifactDecodeError(f"{where} must be a list for {hint}, got {type(data).__name__}")
        items = args[:1] * len(data) if args[-1:] == (Ellipsis,) else args
        return tuple(_decode(d, h, decoder, f"{where}[{i}]") for i, (d, h) in enumerate(zip(data, items)))
    if hint in _SCALARS:
        if type(data) is not hint:
            raise ArtifactDecodeError(f"{where} must be {hint.__name__}, got {type(data).__name__}")
        return data
    if hint is DataType:
        return decode_dtype(data)
    if hint is Var:
        return decoder.var(data)
    if hint is Expr:
        return decoder.decode(data)
    if hint is Target:
        return _decode_target(data, where)
    if is_dataclass(hint):
        values = _exact_keys(data, _record_fields(hint), where)
        return hint(**{k: _decode(v, _hints(hint)[k], decoder, f"{where}.{k}") for k, v in values.items()})
    raise ArtifactDecodeError(f"{where}: no JSON decoding for {hint}")


def _decode_any(data: Any, where: str) -> Any:
    if data is None or type(data) in _SCALARS:
        return data
    if isinstance(data, list):
        return tuple(_decode_any(d, f"{where}[{i}]") for i, d in enumerate(data))
    if isinstance(data, dict) and set(data) == {"list"} and isinstance(data["list"], list):
        return [_decode_any(d, f"{where}[{i}]") for i, d in enumerate(data["list"])]
    raise ArtifactDecodeError(f"{where} must be null, a bool, number, string or list, got {data!r:.80}")


def _decode_target(data: Any, where: str) -> Target:
    from tilecraft.backend.target import Target

    values = _exact_keys(data, {"kind", "attrs"}, where)
    kind, attrs = values["kind"], values["attrs"]
    if not isinstance(kind, str) or not kind or not isinstance(attrs, list):
        raise ArtifactDecodeError(f"{where} must be {{'kind': str, 'attrs': [[key, value], ...]}}")
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in attrs):
        raise ArtifactDecodeError(f"{where}.attrs must be a list of [key, value] pairs")
    return Target(kind, tuple((k, v) for k, v in attrs))  # Target checks each key and value itself
