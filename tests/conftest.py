"""Session-wide test setup: an isolated kernel cache, so tests neither read nor pollute the user's; one
for the whole run, shared by pytest-xdist's workers."""

from __future__ import annotations

import os
import tempfile

import pytest

RUN_CACHE = "TILECRAFT_TEST_RUN_CACHE"


def pytest_configure(config: pytest.Config) -> None:
    """One kernel cache for the whole run: pytest-xdist's workers start after this and inherit the
    variable, so a kernel one worker compiled (the conformance kernels are built by several test files)
    is a hit in the other, as in a user's processes sharing a cache."""
    if os.environ.get("TILECRAFT_TEST_KEEP_CACHE") or os.environ.get(RUN_CACHE):
        return
    config.stash[_RUN_CACHE_KEY] = tempfile.TemporaryDirectory(prefix="tilecraft-test-cache-")
    os.environ[RUN_CACHE] = config.stash[_RUN_CACHE_KEY].name


def pytest_unconfigure(config: pytest.Config) -> None:
    cache = config.stash.get(_RUN_CACHE_KEY, None)
    if cache is not None:
        os.environ.pop(RUN_CACHE, None)
        cache.cleanup()


_RUN_CACHE_KEY = pytest.StashKey[tempfile.TemporaryDirectory]()


@pytest.fixture(autouse=True, scope="session")
def isolated_kernel_cache():
    if os.environ.get("TILECRAFT_TEST_KEEP_CACHE"):
        yield None
        return
    old = os.environ.get("TILECRAFT_CACHE_DIR")
    os.environ["TILECRAFT_CACHE_DIR"] = os.environ[RUN_CACHE]
    try:
        yield os.environ[RUN_CACHE]
    finally:
        if old is None:
            os.environ.pop("TILECRAFT_CACHE_DIR", None)
        else:
            os.environ["TILECRAFT_CACHE_DIR"] = old
