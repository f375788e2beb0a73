"""Session-wide test setup: an isolated kernel cache, so tests neither read nor pollute the user's."""

from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def isolated_kernel_cache():
    if os.environ.get("TILECRAFT_TEST_KEEP_CACHE"):
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="tilecraft-test-cache-") as tmp:
        old = os.environ.get("TILECRAFT_CACHE_DIR")
        os.environ["TILECRAFT_CACHE_DIR"] = tmp
        try:
            yield tmp
        finally:
            if old is None:
                os.environ.pop("TILECRAFT_CACHE_DIR", None)
            else:
                os.environ["TILECRAFT_CACHE_DIR"] = old
