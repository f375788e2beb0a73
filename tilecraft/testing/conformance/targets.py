"""Every (target kind, execution backend) pair the registry declares, and the context of one pair here.

Nothing here names a backend: the pairs come from the registered manifests. A pair runs where its kind's
detector finds a target and its execution backend is available; otherwise `resolve` raises `NotHere`
with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.backend import BackendContext, Target, create_backend_context, lookup_target_kind
from tilecraft.backend.registry import registered_backends


@dataclass(frozen=True)
class TargetCase:
    """One declared pair: a target kind and an execution backend its manifest lists (and the manifest's
    name where it is a variant of the kind: its targets name it)."""

    kind: str
    execution_backend: str
    variant: str | None = None

    @property
    def id(self) -> str:
        return f"{self.variant or self.kind}-{self.execution_backend}"


class NotHere(Exception):
    """A declared pair cannot run on this machine; the message says why.

    `missing_hardware` is False when the kind cannot be detected at all (no detector: it is only used when
    named), which no machine changes; True when the target or the execution backend is absent here.
    """

    def __init__(self, reason: str, missing_hardware: bool = True) -> None:
        super().__init__(reason)
        self.missing_hardware = missing_hardware


def declared_cases(backend: str | None = None) -> list[TargetCase]:
    """Every pair of every manifest (or of the manifest named `backend`), in registration order."""
    return [
        TargetCase(kind, spec.name, manifest.name if manifest.variant else None)
        for manifest in registered_backends()
        if backend is None or manifest.name == backend
        for kind in manifest.target_kinds
        for spec in manifest.execution_backends
    ]


def resolve(case: TargetCase) -> BackendContext:
    """The BackendContext of a pair on this machine: the detected target of its kind, run by its
    execution backend; `NotHere` when either is absent."""
    kind = lookup_target_kind(case.kind)
    if kind.detect is None:
        raise NotHere(
            f"target kind {case.kind} has no detector; it is only used when named explicitly", False
        )
    try:
        found = kind.detect()
    except Exception as exc:  # noqa: BLE001 - a detector failing means "not present"
        raise NotHere(f"target {case.kind} not present: {exc}") from exc
    if not isinstance(found, Target):
        raise NotHere(f"target {case.kind} not present: {found or 'not detected'}")
    if case.variant is not None:
        found = found.with_attrs(backend=case.variant)
    spec = next(
        s for m in registered_backends() for s in m.execution_backends if s.name == case.execution_backend
    )
    status = spec.check()
    if not status.ok:
        raise NotHere(f"execution backend {case.execution_backend} unavailable: {status.reason}")
    return create_backend_context(found, execution_backend=case.execution_backend)
