"""`BackendContext`: target and execution state, resolved once and then only consulted.

`create_backend_context` parses the target, selects exactly one manifest (kind + variant predicate) and
exactly one execution backend: an explicit name must be declared for the target and available; `auto`
takes the first available declared backend in the manifest's order. Lowering, codegen, cache, JIT,
export and autotuning all go through the context and never re-resolve either choice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tilecraft.backend.codegen import DeviceCode, HostCode
from tilecraft.backend.errors import (
    ExecutionBackendNotDeclared,
    ExecutionBackendUnavailable,
    NoExecutionBackendAvailable,
)
from tilecraft.backend.execution import ExecutionBackend, ExecutionBackendSpec
from tilecraft.backend.module import BackendModule
from tilecraft.backend.pipeline import PassContext, internal_errors
from tilecraft.backend.registry import backend_for
from tilecraft.backend.split import split_host_device
from tilecraft.backend.target import Target
from tilecraft.errors import BackendError

if TYPE_CHECKING:
    from tilecraft.backend.instrument import PassInstrument
    from tilecraft.ir import IRModule

AUTO = "auto"


@dataclass(frozen=True)
class BackendContext:
    """The resolved target, host target, target-backend manifest and execution-backend spec."""

    target: Target
    target_host: Target | None
    backend: BackendModule
    execution: ExecutionBackendSpec

    def lower(
        self,
        mod: IRModule,
        pass_configs: Mapping[str, Any] | None = None,
        instrument: PassInstrument | None = None,
    ) -> IRModule:
        """Run the backend's complete pipeline for the target's kind."""
        pipeline = self.backend.pipelines[self.target.kind]
        return pipeline.run(mod, PassContext(self.target, pass_configs or {}, self), instrument)

    def split(self, lowered: IRModule) -> tuple[IRModule, IRModule]:
        """(host module, device module), by each function's `tilecraft.role` attribute."""
        return split_host_device(lowered)

    def codegen_device(
        self, device_mod: IRModule, compile: bool | None = None, options: Mapping[str, Any] | None = None
    ) -> DeviceCode:
        """Device sources, plus binaries when `compile` (default: what the execution backend wants).

        `options` is what the user asks of the device compiler (see `DeviceCode.compile_options`).
        """
        eager = self.execution.eager_device_compile if compile is None else compile
        with internal_errors("device-codegen", self.target.kind, self.target, device_mod):
            return self.backend.device_codegens[self.target.kind].generate(device_mod, self, eager, options)

    def preprocess_host(self, host_mod: IRModule) -> IRModule:
        """Apply the manifest's host-codegen hooks, in order."""
        for hook in self.backend.host_codegen_hooks:
            host_mod = hook.apply(host_mod, self)
        return host_mod

    def codegen_host(self, host_mod: IRModule) -> HostCode | None:
        """Host code in the first format the execution backend consumes; None if it needs none."""
        if not self.execution.needs_host_codegen:
            return None
        fmt = next(f for f in self.execution.consumes if f in self.backend.host_codegens)
        with internal_errors("host-codegen", self.target.kind, self.target, host_mod):
            return self.backend.host_codegens[fmt].run(host_mod, self)

    def execution_backend(self) -> ExecutionBackend:
        """The implementation object of the selected execution backend (created once, lazily)."""
        return self._execution_backend

    @cached_property
    def _execution_backend(self) -> ExecutionBackend:
        from tilecraft.backend.execution_registry import implementation

        return implementation(self.execution)

    def callback(self, name: str) -> Callable[..., Any]:
        """A callback the backend exposes (a toolchain helper, say); the error lists the declared ones."""
        if name not in self.backend.callbacks:
            declared = ", ".join(self.backend.callbacks) or "none"
            raise BackendError(
                f"backend {self.backend.name!r} has no callback {name!r}; declared: {declared}"
            )
        return self.backend.callbacks[name]


def create_backend_context(
    target: Target | str | Mapping[str, Any] | None,
    target_host: Target | str | Mapping[str, Any] | None = None,
    execution_backend: str = AUTO,
    require_available: bool = True,
) -> BackendContext:
    """Resolve `target` ("auto"/None: TILECRAFT_TARGET or detection), its backend and execution backend.

    With `require_available=False` the execution backend only has to be declared (for lowering and
    code generation on a machine that cannot run the kernel, e.g. CI without a GPU); `auto` then picks
    the first available one, else the first declared.
    """
    resolved = Target.parse(target)
    host = Target.parse(target_host) if target_host is not None else None
    backend = backend_for(resolved)
    spec = select_execution_backend(backend, resolved, execution_backend, require_available)
    return BackendContext(resolved, host, backend, spec)


# Names a compatibility layer lets programs give for an execution backend (another library's), with the
# name each selects (`alias_execution_backends`).
_aliases: dict[str, str] = {}


def alias_execution_backends(aliases: Mapping[str, str] | None) -> None:
    """From now on in this process, a request for an execution backend named like a key of `aliases`
    selects its value (`auto` or a backend's name) instead; None ends every alias. For a compatibility
    layer whose programs name the other library's ways of calling a kernel."""
    _aliases.clear()
    _aliases.update(aliases or {})


def select_execution_backend(
    backend: BackendModule, target: Target, name: str = AUTO, require_available: bool = True
) -> ExecutionBackendSpec:
    """The execution backend for `target`: the named one, checked, or with `auto` the first available."""
    name = _aliases.get(name, name)
    declared = [s for s in backend.execution_backends if s.matches(target)]
    if name == AUTO:
        if not require_available and declared and not any(s.check().ok for s in declared):
            return declared[0]
        return _first_available(backend, target, declared)
    spec = next((s for s in declared if s.name == name), None)
    if spec is None:
        listed = ", ".join(s.name for s in declared) or "none"
        raise ExecutionBackendNotDeclared(
            f"execution backend {name!r} is not declared for target {target}; declared: {listed}; "
            "use 'auto' to pick the first available"
        )
    status = spec.check()
    if not status.ok and require_available:
        raise ExecutionBackendUnavailable(
            f"execution backend {name!r} is declared for target {target} but unavailable: "
            f"{status.reason or 'no reason given'}; fix: {status.fix or 'see tilecraft doctor'}"
        )
    return spec


def _first_available(
    backend: BackendModule, target: Target, declared: list[ExecutionBackendSpec]
) -> ExecutionBackendSpec:
    for spec in declared:
        if spec.check().ok:
            return spec
    lines = [
        f"no execution backend is available for target {target} (backend {backend.name!r}); tried in order:"
    ]
    for spec in backend.execution_backends:
        why = (
            spec.check().describe() if spec in declared else "not declared for this target (target predicate)"
        )
        lines.append(f"  {spec.name}: {why}")
    lines.append("fix: apply one of the fixes above, or choose another target")
    raise NoExecutionBackendAvailable("\n".join(lines))
