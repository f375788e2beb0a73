"""Every (target kind, execution backend) pair the registry declares, for parametrizing conformance tests.

Nothing here names a backend: the pairs come from the registered manifests, and each is resolved (or
skipped with the reason) at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.required import skip_unless_required
from tilecraft.backend import Target, create_backend_context, lookup_target_kind, registered_backends


@dataclass(frozen=True)
class TargetCase:
    kind: str
    execution_backend: str

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.execution_backend}"


def declared_cases() -> list[TargetCase]:
    cases = []
    for manifest in registered_backends():
        for kind in manifest.target_kinds:
            for spec in manifest.execution_backends:
                cases.append(TargetCase(kind, spec.name))
    return cases


def resolve(case: TargetCase):
    """The BackendContext for a case, or pytest.skip with why it cannot run here."""
    kind = lookup_target_kind(case.kind)
    if kind.detect is None:
        pytest.skip(f"target kind {case.kind} has no detector; it is only used when named explicitly")
    try:
        found = kind.detect()
    except Exception as exc:  # noqa: BLE001 - a detector failing means "not present"
        skip_unless_required(case.execution_backend, f"target {case.kind} not present: {exc}")
    if not isinstance(found, Target):
        skip_unless_required(
            case.execution_backend, f"target {case.kind} not present: {found or 'not detected'}"
        )
    spec = next(
        s for m in registered_backends() for s in m.execution_backends if s.name == case.execution_backend
    )
    status = spec.check()
    if not status.ok:
        skip_unless_required(
            case.execution_backend, f"execution backend {case.execution_backend} unavailable: {status.reason}"
        )
    return create_backend_context(found, execution_backend=case.execution_backend)
