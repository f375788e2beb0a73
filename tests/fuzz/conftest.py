"""Parametrize the fuzz tests over every declared (target, execution backend) pair, as conformance does."""

from __future__ import annotations

import pytest

from tests.conformance.targets import declared_cases, resolve
from tests.fuzz.runner import FuzzTarget


def pytest_generate_tests(metafunc):
    if "fuzz_target" in metafunc.fixturenames:
        cases = declared_cases()
        metafunc.parametrize("target_case", cases, ids=[c.id for c in cases], scope="session")


@pytest.fixture(scope="session")
def fuzz_target(target_case) -> FuzzTarget:
    return FuzzTarget(resolve(target_case))
