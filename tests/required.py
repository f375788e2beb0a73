"""Execution backends a test run must have: `CI_REQUIRE_EXECUTION_BACKENDS=cc,opencl` (set by .ci/run)
turns "unavailable, skipped" into a failure for those names, so a broken driver cannot pass CI as skips."""

from __future__ import annotations

import os

import pytest

VARIABLE = "CI_REQUIRE_EXECUTION_BACKENDS"


def required_execution_backends() -> frozenset[str]:
    return frozenset(n.strip() for n in os.environ.get(VARIABLE, "").split(",") if n.strip())


def skip_unless_required(execution_backend: str, reason: str) -> None:
    """pytest.skip with the reason, or pytest.fail when this run requires the execution backend."""
    if execution_backend in required_execution_backends():
        pytest.fail(f"{VARIABLE} requires {execution_backend!r}, but it cannot run here: {reason}")
    pytest.skip(reason)
