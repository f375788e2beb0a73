"""Device headers: a backend's header text with the shared helpers (include/tc_common.h) inserted."""

from __future__ import annotations

import functools
from pathlib import Path

COMMON = Path(__file__).parent / "include" / "tc_common.h"
MARKER = "@tilecraft-common"


@functools.cache
def header_text(path: Path) -> str:
    """`path`'s text with the line holding the marker replaced by the shared helpers."""
    common = COMMON.read_text()
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        lines.append(common if MARKER in line else line)
    return "".join(lines)
