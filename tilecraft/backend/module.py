"""`BackendModule`: the frozen, self-checking manifest a target backend registers.

It names the target kinds the backend owns, its variant predicate, one pipeline and one device codegen
per owned kind, host codegens by format, host-codegen hooks, the execution backends that can consume
its output (in `auto` order), callbacks (toolchain helpers the backend exposes), the pass configs its
pipeline reads (key -> one-line doc), so `pass_configs` can be checked against them, what it does not
support (`unsupported`: limit -> one-line reason, the only lowering errors the conformance kit accepts as
a skip), and the plugin API version it was written for. Every rule is checked when the manifest is built;
each message lists what was allowed.

A *variant* (`variant=True`) shares a target kind with that kind's own backend and handles only the
targets that name it (`-backend=NAME`, or its spelling from `register_target_variant`): the kind's rules,
attributes and detection stay one, and the variant differs in its pipeline, codegen and execution
backends. A backend that owns a new kind needs no such flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.backend.api import api_version_problem
from tilecraft.backend.codegen import DeviceCodegen, HostCodegen, HostCodegenHook
from tilecraft.backend.errors import ManifestError, PluginAPIError
from tilecraft.backend.execution import ExecutionBackendSpec
from tilecraft.backend.formats import LIMIT_KEY, UNSUPPORTED_KINDS, first_doc_line, frozen_mapping
from tilecraft.backend.pipeline import PassPipeline

if TYPE_CHECKING:
    from tilecraft.backend.target import Target

_NAME = re.compile(r"[a-z][a-z0-9_-]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class BackendModule:
    """A target backend's manifest; see the module docstring. Validated on construction."""

    name: str
    target_kinds: tuple[str, ...]
    pipelines: Mapping[str, PassPipeline]
    device_codegens: Mapping[str, DeviceCodegen]
    execution_backends: tuple[ExecutionBackendSpec, ...]
    predicate: Callable[[Target], bool] | None = None
    host_codegens: Mapping[str, HostCodegen] = field(default_factory=dict)
    host_codegen_hooks: tuple[HostCodegenHook, ...] = ()
    callbacks: Mapping[str, Callable[..., Any]] | Iterable[tuple[str, Callable[..., Any]]] = field(
        default_factory=dict
    )
    dialect: str = ""
    doc: str = ""
    pass_configs: Mapping[str, str] = field(default_factory=dict)
    unsupported: Mapping[str, str] = field(default_factory=dict)
    api_version: int | None = None
    # Last, so that manifests written with positional fields before it was added keep their meaning.
    variant: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_kinds", tuple(self.target_kinds))
        object.__setattr__(self, "execution_backends", tuple(self.execution_backends))
        object.__setattr__(self, "host_codegen_hooks", tuple(self.host_codegen_hooks))
        object.__setattr__(self, "callbacks", frozen_mapping(_unique_callbacks(self.name, self.callbacks)))
        for name in ("pipelines", "device_codegens", "host_codegens", "pass_configs", "unsupported"):
            object.__setattr__(self, name, frozen_mapping(getattr(self, name)))
        for check in _CHECKS:
            check(self)

    def __hash__(self) -> int:
        return hash(self.name)

    def fail(self, problem: str) -> ManifestError:
        return ManifestError(f"backend manifest {self.name!r}: {problem}")

    def matches(self, target: Target) -> bool:
        """Whether this manifest handles `target`: it owns the kind, the target names this backend (a
        variant) or no other one (`-backend=`), and the predicate (if any) accepts it."""
        from tilecraft.backend.target import BACKEND_ATTR

        if target.kind not in self.target_kinds:
            return False
        named = target.attr(BACKEND_ATTR)
        if named != self.name and (named is not None or self.variant):
            return False
        return self.predicate is None or bool(self.predicate(target))

    def own_target(self, target: Target) -> Target:
        """`target` as one this manifest handles: with `-backend=NAME` for a variant (how the examples
        and detected targets of a kind it shares become its own), else unchanged."""
        from tilecraft.backend.target import BACKEND_ATTR

        return target.with_attrs(**{BACKEND_ATTR: self.name}) if self.variant else target

    @property
    def predicate_doc(self) -> str:
        """The variant predicate in words: its docstring's first line, else its name."""
        chosen = f"targets naming it (-backend={self.name})" if self.variant else "every target of its kinds"
        if self.predicate is None:
            return chosen
        return first_doc_line(self.predicate) or getattr(self.predicate, "__name__", repr(self.predicate))

    @property
    def produced_formats(self) -> tuple[str, ...]:
        """Every artifact format this backend's device and host codegens can emit."""
        formats = [f for cg in self.device_codegens.values() for f in cg.formats] + list(self.host_codegens)
        return tuple(dict.fromkeys(formats))

    def execution_backend(self, name: str) -> ExecutionBackendSpec | None:
        return next((s for s in self.execution_backends if s.name == name), None)


def _unique_callbacks(owner: str, callbacks: Any) -> dict[str, Any]:
    pairs = list(callbacks.items()) if isinstance(callbacks, Mapping) else list(callbacks)
    names = [name for name, _ in pairs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ManifestError(
            f"backend manifest {owner!r}: duplicate callback names {duplicates}; names must be unique"
        )
    return dict(pairs)


def _check_identity(m: BackendModule) -> None:
    if not isinstance(m.name, str) or not _NAME.fullmatch(m.name):
        raise ManifestError(f"backend manifest name {m.name!r} must match {_NAME.pattern}")
    if not m.target_kinds or any(not isinstance(k, str) for k in m.target_kinds):
        raise m.fail(f"target_kinds must be a non-empty tuple of kind names, got {m.target_kinds!r}")
    if len(set(m.target_kinds)) != len(m.target_kinds):
        raise m.fail(f"target_kinds {m.target_kinds} contain duplicates")
    if m.predicate is not None and not callable(m.predicate):
        raise m.fail(
            "predicate must be a callable (Target) -> bool, or None to match every target of its kinds"
        )
    if not isinstance(m.dialect, str) or (m.dialect and not _DOTTED.fullmatch(m.dialect)):
        raise m.fail(
            f"dialect must be a module path such as 'tilecraft.mybackend.language', got {m.dialect!r}"
        )
    if not isinstance(m.doc, str):
        raise m.fail("doc must be a string")
    if not isinstance(m.variant, bool):
        raise m.fail(f"variant must be True or False, got {m.variant!r}")


def _check_per_kind(m: BackendModule, what: str, mapping: Mapping[str, Any], cls: type) -> None:
    owned = ", ".join(m.target_kinds)
    missing = [k for k in m.target_kinds if k not in mapping]
    if missing:
        raise m.fail(f"no {what} for kind(s) {', '.join(missing)}; give exactly one per owned kind ({owned})")
    extra = [k for k in mapping if k not in m.target_kinds]
    if extra:
        raise m.fail(f"{what} given for kind(s) {', '.join(extra)} the manifest does not own; owned: {owned}")
    for kind, value in mapping.items():
        if not isinstance(value, cls):
            raise m.fail(f"{what} for kind {kind!r} is a {type(value).__name__}; expected {cls.__name__}")


def _check_pipelines(m: BackendModule) -> None:
    _check_per_kind(m, "pipeline", m.pipelines, PassPipeline)
    for kind, pipeline in m.pipelines.items():
        if pipeline.name != kind:
            raise m.fail(f"the pipeline for kind {kind!r} is named {pipeline.name!r}; name it {kind!r}")


def _check_device_codegens(m: BackendModule) -> None:
    _check_per_kind(m, "device codegen", m.device_codegens, DeviceCodegen)


def _check_host_codegens(m: BackendModule) -> None:
    for fmt, codegen in m.host_codegens.items():
        if not isinstance(codegen, HostCodegen) or codegen.format != fmt:
            raise m.fail(f"host_codegens[{fmt!r}] must be a HostCodegen of format {fmt!r}")
    hooks = [h.name if isinstance(h, HostCodegenHook) else None for h in m.host_codegen_hooks]
    if None in hooks:
        raise m.fail("host_codegen_hooks must all be HostCodegenHook objects")
    if len(set(hooks)) != len(hooks):
        raise m.fail(f"host codegen hook names {hooks} contain duplicates")


def _check_execution_backends(m: BackendModule) -> None:
    specs = m.execution_backends
    if not specs:
        raise m.fail(
            "declares no execution backends; list at least one ExecutionBackendSpec, in `auto` order"
        )
    if any(not isinstance(s, ExecutionBackendSpec) for s in specs):
        raise m.fail("execution_backends must all be ExecutionBackendSpec objects")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise m.fail(f"execution backend names must be unique; duplicated: {', '.join(duplicates)}")


def _check_compatibility(m: BackendModule) -> None:
    produced = m.produced_formats
    for spec in m.execution_backends:
        if spec.needs_host_codegen and not any(f in m.host_codegens for f in spec.consumes):
            raise m.fail(
                f"execution backend {spec.name!r} needs host codegen in one of its formats "
                f"({', '.join(spec.consumes)}); host codegens declared: "
                f"{', '.join(m.host_codegens) or 'none'}"
            )
        if not set(spec.consumes) & set(produced):
            raise m.fail(
                f"execution backend {spec.name!r} consumes {', '.join(spec.consumes)} but this backend "
                f"produces {', '.join(produced)}; declare only execution backends that can consume its output"
            )


def _check_pass_configs(m: BackendModule) -> None:
    for key, doc in m.pass_configs.items():
        if not isinstance(key, str) or not _DOTTED.fullmatch(key):
            raise m.fail(
                f"pass config keys must be dotted names such as 'tilecraft.mybackend.option', got {key!r}"
            )
        if not isinstance(doc, str) or not doc:
            raise m.fail(f"pass config {key!r} needs a one-line doc string saying what it does")


def _check_api_version(m: BackendModule) -> None:
    problem = api_version_problem(f"backend manifest {m.name!r}", m.api_version)
    if problem:
        raise PluginAPIError(problem)


def _check_unsupported(m: BackendModule) -> None:
    for key, reason in m.unsupported.items():
        if not isinstance(key, str) or not LIMIT_KEY.fullmatch(key):
            raise m.fail(
                f"unsupported keys are '<kind>:<name>' with kind one of {', '.join(UNSUPPORTED_KINDS)} "
                f"(such as 'dtype:float64' or 'op:Cumsum'), got {key!r}"
            )
        if not isinstance(reason, str) or not reason:
            raise m.fail(f"unsupported {key!r} needs a one-line reason saying why (and what to do instead)")


def _check_callbacks(m: BackendModule) -> None:
    for name, fn in m.callbacks.items():
        if not isinstance(name, str) or not name:
            raise m.fail(f"callback names must be non-empty strings, got {name!r}")
        if not callable(fn):
            raise m.fail(f"callback {name!r} is not callable")


_CHECKS = (
    _check_identity,
    _check_api_version,  # first after the name: a manifest for another API may break the other rules
    _check_pipelines,
    _check_device_codegens,
    _check_host_codegens,
    _check_execution_backends,
    _check_compatibility,
    _check_callbacks,
    _check_pass_configs,
    _check_unsupported,
)
