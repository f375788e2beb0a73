"""Registry of execution backends: each spec once per name, and its implementation as a lazy singleton.

Specs usually arrive through `register_backend(manifest)`, which registers the specs a manifest
declares, or through the `tilecraft.execution_backends` entry points; registering the same spec again is
harmless, a different spec under the same name is an error. Lookups load the plugins first.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tilecraft.backend.execution import ExecutionBackend, ExecutionBackendSpec
from tilecraft.errors import BackendError

_lock = threading.RLock()
_specs: dict[str, ExecutionBackendSpec] = {}
_implementations: dict[str, ExecutionBackend] = {}


def register_execution_backend(spec: ExecutionBackendSpec) -> ExecutionBackendSpec:
    """Register `spec` under its name; idempotent for an equal spec, an error for a different one."""
    if not isinstance(spec, ExecutionBackendSpec):
        raise BackendError(
            f"register_execution_backend expects an ExecutionBackendSpec, got {type(spec).__name__}"
        )
    with _lock:
        check_registrable(spec)
        _specs.setdefault(spec.name, spec)
        return _specs[spec.name]


def check_registrable(spec: ExecutionBackendSpec) -> None:
    """Raise if a different spec is registered under `spec.name` (lets callers check before changing)."""
    existing = _specs.get(spec.name)
    if existing is not None and existing != spec:
        raise BackendError(
            f"execution backend {spec.name!r} is already registered with a different spec "
            f"(implementation {existing.implementation}); give the new one another name"
        )


def unregister_execution_backend(name: str) -> None:
    """Remove a spec and its implementation object (for tests)."""
    with _lock:
        _specs.pop(name, None)
        _implementations.pop(name, None)


def _ensure_plugins() -> None:
    # Imported here: the loader lives with the backend registry, which imports this module.
    from tilecraft.backend._loader import ensure_backends

    ensure_backends()


def get_spec(name: str) -> ExecutionBackendSpec:
    """The registered spec called `name`; the error lists the registered names."""
    _ensure_plugins()
    with _lock:
        spec = _specs.get(name)
        if spec is None:
            raise BackendError(f"no execution backend {name!r} is registered; registered: {_names()}")
        return spec


def registered_execution_backends() -> tuple[ExecutionBackendSpec, ...]:
    """Every registered spec, sorted by name."""
    _ensure_plugins()
    with _lock:
        return tuple(_specs[name] for name in sorted(_specs))


def _names() -> str:
    return ", ".join(sorted(_specs)) or "(none)"


def implementation(spec: ExecutionBackendSpec) -> ExecutionBackend:
    """The implementation object of a registered spec, imported and created on first use."""
    with _lock:
        if get_spec(spec.name) != spec:
            raise BackendError(
                f"execution backend {spec.name!r}: the spec given differs from the registered one"
            )
        if spec.name not in _implementations:
            _implementations[spec.name] = _instantiate(spec)
        return _implementations[spec.name]


def _instantiate(spec: ExecutionBackendSpec) -> ExecutionBackend:
    module_name, _, class_name = spec.implementation.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        raise BackendError(
            f"execution backend {spec.name!r}: cannot import implementation {spec.implementation!r}: {err}"
        ) from err
    if not (isinstance(cls, type) and issubclass(cls, ExecutionBackend)):
        raise BackendError(
            f"execution backend {spec.name!r}: {spec.implementation} is not an ExecutionBackend class"
        )
    return cls(spec)


def reset_availability() -> None:
    """Forget every cached availability probe result (tests, or after installing a toolchain)."""
    with _lock:
        for spec in _specs.values():
            spec.reset_availability()


@contextmanager
def isolated() -> Iterator[None]:
    """Within the block the registry starts empty; on exit the previous state is restored."""
    with _lock:
        saved = dict(_specs), dict(_implementations)
        _specs.clear()
        _implementations.clear()
    try:
        yield
    finally:
        with _lock:
            _specs.clear()
            _implementations.clear()
            _specs.update(saved[0])
            _implementations.update(saved[1])
