"""Parametrize conformance tests over every declared (target, execution backend) pair."""

from __future__ import annotations

import pytest

from tests.conformance.targets import declared_cases, resolve


def pytest_generate_tests(metafunc):
    if "backend_ctx" in metafunc.fixturenames:
        cases = declared_cases()
        metafunc.parametrize("target_case", cases, ids=[c.id for c in cases], scope="session")


@pytest.fixture(scope="session")
def backend_ctx(target_case):
    return resolve(target_case)
