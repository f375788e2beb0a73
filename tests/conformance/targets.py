"""The kit's (target kind, execution backend) pairs for pytest: a pair that cannot run here is skipped
with the reason, or fails where CI requires its execution backend (tests/required.py)."""

from __future__ import annotations

import pytest

from tests.required import skip_unless_required
from tilecraft.testing.conformance.targets import NotHere, TargetCase, declared_cases
from tilecraft.testing.conformance.targets import resolve as resolve_here

__all__ = ["TargetCase", "declared_cases", "resolve"]


def resolve(case: TargetCase):
    """The BackendContext for a case, or pytest.skip with why it cannot run here."""
    try:
        return resolve_here(case)
    except NotHere as why:
        if not why.missing_hardware:
            pytest.skip(str(why))
        skip_unless_required(case.execution_backend, str(why))
