"""`SimtTarget`, the hardware facts a SIMT backend declares to the shared passes, checks itself."""

from __future__ import annotations

import pytest

from tilecraft.backend import SimtTarget
from tilecraft.errors import BackendError


@pytest.mark.parametrize("width, lane_bits", [(1, 0), (16, 4), (32, 5), (64, 6)])
def test_lane_bits_are_log2_of_the_width(width, lane_bits):
    assert SimtTarget(width=width, max_threads=1024, vector_bytes=16).lane_bits == lane_bits


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(width=48), "width must be a power of two >= 1, got 48"),
        (dict(width=0), "width must be a power of two >= 1, got 0"),
        (dict(max_threads=True), "max_threads must be a power of two >= 1, got True"),
        (dict(vector_bytes=12), "vector_bytes must be a power of two >= 1, got 12"),
        (dict(width=64, max_threads=32), r"max_threads \(32\) is below the thread-group width \(64\)"),
        (dict(exchange="shuffle"), "exchange must be a callable"),
    ],
)
def test_impossible_facts_are_refused_with_what_is_allowed(fields, message):
    with pytest.raises(BackendError, match=message):
        SimtTarget(**{"width": 32, "max_threads": 1024, "vector_bytes": 16, **fields})
