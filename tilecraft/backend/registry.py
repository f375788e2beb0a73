"""The registry of target-backend manifests, and selection of the one that handles a target.

Manifests sharing a target kind must have mutually exclusive predicates, unless all but one of them are
declared variants (`BackendModule.variant`), which handle only the targets that name them
(`-backend=NAME`). What can be checked at registration is: a manifest without a predicate that is not a
variant matches every target of its kinds that names no variant, so it may not share a kind with another
such manifest. Whether two predicates overlap is checked when a target is
looked up: more than one match is an error naming them.

Backends are found through entry points (tilecraft/backend/_loader.py), loaded on the first lookup, not
at import.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tilecraft.backend import execution_registry
from tilecraft.backend._loader import ensure_backends, plugin_problems, plugins_suspended
from tilecraft.backend.errors import ManifestError
from tilecraft.backend.module import BackendModule
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import KINDS, describe_kinds
from tilecraft.errors import BackendError

_lock = threading.RLock()
_manifests: dict[str, BackendModule] = {}


def register_backend(module: BackendModule) -> BackendModule:
    """Register a manifest (and the execution-backend specs it declares).

    The same manifest again (the same object or equal content) is harmless; a different manifest under
    the same name, or one whose kinds collide with another manifest's, is an error.
    """
    if not isinstance(module, BackendModule):
        raise ManifestError(f"register_backend expects a BackendModule, got {type(module).__name__}")
    if any(kind not in KINDS.kinds for kind in module.target_kinds):
        # A variant of another backend's kind needs that kind, and that manifest to be checked against.
        # A package that registered its own kind first (every built-in one does) loads nothing here:
        # importing the other backend packages from inside its import could deadlock two threads that
        # import two of them at once, on Python's import locks. Exclusivity is still checked: by
        # whichever of two manifests sharing a kind registers second.
        ensure_backends()
    with _lock:
        existing = _manifests.get(module.name)
        if existing is not None:
            if existing is module or existing == module:
                return existing
            raise ManifestError(
                f"a different backend manifest named {module.name!r} is already registered; "
                "give the new one another name, or unregister the old one first"
            )
        _check_kinds_registered(module)
        _check_exclusive(module)
        for spec in module.execution_backends:  # all checked first, so a failure registers nothing
            execution_registry.check_registrable(spec)
        for spec in module.execution_backends:
            execution_registry.register_execution_backend(spec)
        _manifests[module.name] = module
        return module


def _check_kinds_registered(module: BackendModule) -> None:
    unknown = [k for k in module.target_kinds if k not in KINDS.kinds]
    if unknown:
        raise ManifestError(
            f"backend manifest {module.name!r} owns kind(s) {', '.join(unknown)} that are not registered "
            f"target kinds; register their TargetKind first ({describe_kinds()})"
        )


def _check_exclusive(module: BackendModule) -> None:
    for other in _manifests.values():
        shared = [k for k in module.target_kinds if k in other.target_kinds]
        if module.variant or other.variant:
            continue  # a variant handles only the targets that name it
        if shared and (module.predicate is None or other.predicate is None):
            without = module.name if module.predicate is None else other.name
            raise ManifestError(
                f"backend manifests {other.name!r} and {module.name!r} share kind(s) {', '.join(shared)}, "
                f"and {without!r} has no predicate, so it matches every such target; give both manifests "
                "mutually exclusive predicates"
            )


def unregister_backend(name: str) -> None:
    """Remove a manifest (for tests); its execution-backend specs stay registered."""
    with _lock:
        _manifests.pop(name, None)


def registered_backends() -> tuple[BackendModule, ...]:
    """Every registered manifest, in registration order."""
    ensure_backends()
    with _lock:
        return tuple(_manifests.values())


def target_kinds() -> tuple[str, ...]:
    """The names of every registered target kind, sorted."""
    ensure_backends()
    return tuple(sorted(KINDS.kinds))


def backend_for(target: Target) -> BackendModule:
    """The one manifest that handles `target` (owned kind and matching predicate)."""
    ensure_backends()
    with _lock:
        candidates = [m for m in _manifests.values() if target.kind in m.target_kinds]
    if not candidates:
        raise BackendError(
            f"no backend is registered for target kind {target.kind!r}; backends: "
            f"{_describe_backends()}; install the plugin that provides it{_describe_problems()}"
        )
    matches = [m for m in candidates if m.matches(target)]
    if len(matches) == 1:
        return matches[0]
    variants = "; ".join(f"{m.name} ({m.predicate_doc})" for m in candidates)
    if not matches:
        raise BackendError(
            f"no backend variant accepts target {target}; variants of kind {target.kind!r}: {variants}"
        )
    raise BackendError(
        f"target {target} is accepted by more than one backend variant: "
        f"{', '.join(m.name for m in matches)}; "
        f"their predicates must be mutually exclusive (variants: {variants})"
    )


def _describe_problems() -> str:
    problems = plugin_problems()
    if not problems:
        return ""
    return f"; plugins that failed to load: {'; '.join(p.describe() for p in problems)}"


def _describe_backends() -> str:
    return (
        ", ".join(f"{m.name} (kinds: {', '.join(m.target_kinds)})" for m in _manifests.values()) or "(none)"
    )


@contextmanager
def isolated_registry() -> Iterator[None]:
    """For tests: start with empty manifest, target-kind and execution registries, no plugin loading;
    the previous state comes back on exit, even after an error."""
    with _lock, KINDS.lock:
        saved_manifests = dict(_manifests)
        saved_kinds = KINDS.snapshot()
        _manifests.clear()
        KINDS.restore(({}, {}))
    try:
        with plugins_suspended(), execution_registry.isolated():
            yield
    finally:
        with _lock, KINDS.lock:
            _manifests.clear()
            _manifests.update(saved_manifests)
            KINDS.restore(saved_kinds)
