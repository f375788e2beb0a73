"""Codegen components a backend manifest assembles: device codegen, host codegen, host-codegen hooks.

A `DeviceCodegen` has a source step (IR -> sources by format, always available, so source-only tests
and deferred builds work) and an optional compile step (sources -> binaries by format). A `HostCodegen`
emits host glue in one format. A `HostCodegenHook` rewrites the host module before host codegen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tilecraft.backend.errors import ArtifactError
from tilecraft.backend.formats import KEBAB_NAME, check_format, check_formats, frozen_mapping
from tilecraft.backend.postproc import apply_postprocs
from tilecraft.errors import BackendError

if TYPE_CHECKING:
    from tilecraft.backend.context import BackendContext
    from tilecraft.ir import IRModule
    from tilecraft.runtime.artifact import KernelInfo


@dataclass(frozen=True, eq=False)
class DeviceCode:
    """The output of device codegen: sources and binaries by format, plus launch metadata per kernel
    and the byte alignment the code assumes of every buffer argument (`CompiledArtifact.buffer_alignment`)."""

    sources: Mapping[str, str] = field(default_factory=dict)
    binaries: Mapping[str, bytes] = field(default_factory=dict)
    entry_symbols: tuple[str, ...] = ()
    kernels: tuple[KernelInfo, ...] = ()
    buffer_alignment: int = 1
    # What the user asks of the device compiler, for a compile step to apply: `fast_math` (bool) and
    # `flags` (extra compiler flags, a tuple of str). Set by `DeviceCodegen.generate`.
    compile_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compile_options", frozen_mapping(self.compile_options))
        object.__setattr__(self, "sources", frozen_mapping(self.sources))
        object.__setattr__(self, "binaries", frozen_mapping(self.binaries))
        object.__setattr__(self, "entry_symbols", tuple(self.entry_symbols))
        object.__setattr__(self, "kernels", tuple(self.kernels))
        _check_typed("DeviceCode.sources", self.sources, str)
        _check_typed("DeviceCode.binaries", self.binaries, bytes)

    @property
    def formats(self) -> tuple[str, ...]:
        return (*self.sources, *self.binaries)

    def with_binaries(self, binaries: Mapping[str, bytes]) -> DeviceCode:
        """A copy with `binaries` added (what a compile step returns)."""
        return replace(self, binaries={**self.binaries, **binaries})


def _check_typed(owner: str, mapping: Mapping[str, object], kind: type) -> None:
    for fmt, value in mapping.items():
        check_format(owner, fmt)
        if not isinstance(value, kind):
            raise ArtifactError(f"{owner}[{fmt!r}] is {type(value).__name__}; expected {kind.__name__}")


SourceStep = Callable[["IRModule", "BackendContext"], DeviceCode]
CompileStep = Callable[[DeviceCode, "BackendContext"], DeviceCode]


@dataclass(frozen=True)
class DeviceCodegen:
    """Device codegen of one target kind: `source` always, `compile` when binaries can be produced."""

    source: SourceStep
    compile: CompileStep | None = None
    source_formats: tuple[str, ...] = ()
    binary_formats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_formats", check_formats("DeviceCodegen", self.source_formats))
        object.__setattr__(self, "binary_formats", check_formats("DeviceCodegen", self.binary_formats))
        if not callable(self.source):
            raise BackendError(
                "DeviceCodegen.source must be callable (IRModule, BackendContext) -> DeviceCode"
            )
        if not self.source_formats:
            raise BackendError(
                "DeviceCodegen needs at least one source format, e.g. source_formats=('x-source',)"
            )
        if (self.compile is None) != (not self.binary_formats):
            raise BackendError(
                "DeviceCodegen: give `compile` together with its binary_formats, or neither "
                f"(compile: {'set' if self.compile else 'None'}, binary_formats: {self.binary_formats})"
            )

    @property
    def formats(self) -> tuple[str, ...]:
        return (*self.source_formats, *self.binary_formats)

    def generate(
        self, mod: IRModule, ctx: BackendContext, compile: bool, options: Mapping[str, Any] | None = None
    ) -> DeviceCode:
        """Sources, plus binaries when `compile` is true; the result is checked against the formats.

        `options` (fast math, extra flags) reach the compile step as `code.compile_options`; the
        registered source post-processors (backend/postproc.py) rewrite the sources first.
        """
        code = self.source(mod, ctx)
        _check_output(code, "sources", code.sources, self.source_formats)
        code = replace(code, sources=apply_postprocs(code.sources, ctx.target))
        if not compile:
            return code
        if options:
            code = replace(code, compile_options=options)
        if self.compile is None:
            raise BackendError(
                f"device codegen for target {ctx.target} has no compile step (source formats: "
                f"{', '.join(self.source_formats)}; binary formats: none); call it with compile=False or "
                "select an execution backend that compiles sources itself"
            )
        compiled = self.compile(code, ctx)
        _check_output(compiled, "binaries", compiled.binaries, self.binary_formats)
        return compiled


def _check_output(code: object, what: str, produced: Mapping[str, object], declared: tuple[str, ...]) -> None:
    if not isinstance(code, DeviceCode):
        raise BackendError(f"device codegen returned {type(code).__name__}; it must return a DeviceCode")
    undeclared = [fmt for fmt in produced if fmt not in declared]
    if undeclared:
        raise ArtifactError(
            f"device codegen produced {what} {undeclared} it does not declare; declared: {declared}"
        )


@dataclass(frozen=True)
class HostCode:
    """Host glue source in one format."""

    source: str
    format: str

    def __post_init__(self) -> None:
        check_format("HostCode", self.format)


@dataclass(frozen=True)
class HostCodegen:
    """Host codegen for one format: `generate(host_mod, ctx) -> HostCode` of that format."""

    format: str
    generate: Callable[[IRModule, BackendContext], HostCode]

    def __post_init__(self) -> None:
        check_format("HostCodegen", self.format)
        if not callable(self.generate):
            raise BackendError("HostCodegen.generate must be callable (IRModule, BackendContext) -> HostCode")

    def run(self, mod: IRModule, ctx: BackendContext) -> HostCode:
        code = self.generate(mod, ctx)
        if not isinstance(code, HostCode) or code.format != self.format:
            got = f"HostCode of format {code.format!r}" if isinstance(code, HostCode) else type(code).__name__
            raise ArtifactError(
                f"host codegen for format {self.format!r} returned {got}; expected HostCode of it"
            )
        return code


@dataclass(frozen=True)
class HostCodegenHook:
    """A named rewrite of the host module, applied in manifest order before host codegen."""

    name: str
    apply: Callable[[IRModule, BackendContext], IRModule]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not KEBAB_NAME.fullmatch(self.name):
            raise BackendError(
                f"host codegen hook name {self.name!r} must be kebab-case ({KEBAB_NAME.pattern})"
            )
        if not callable(self.apply):
            raise BackendError(f"host codegen hook {self.name!r}: apply must be callable")
