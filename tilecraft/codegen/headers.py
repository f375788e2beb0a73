"""Device headers: a backend's header text with the shared helper files inserted where it names them.

A line of a backend's header holding `@tilecraft-common` is replaced by include/tc_common.h (min/max,
integer division), one holding `@tilecraft-soft-half` by include/tc_soft_half.h (float16/bfloat16
conversions in integer arithmetic), one holding `@tilecraft-soft-fp8` by include/tc_soft_fp8.h (the float8
conversions), one holding `@tilecraft-soft-mx` by include/tc_soft_mx.h (the microscaling formats, 4-bit
integers and the nibbles of packed memory). The generated source stays one self-contained text.
"""

from __future__ import annotations

import functools
from pathlib import Path

INCLUDE = Path(__file__).parent / "include"
SHARED_TEXTS = {
    "@tilecraft-common": INCLUDE / "tc_common.h",
    "@tilecraft-soft-half": INCLUDE / "tc_soft_half.h",
    "@tilecraft-soft-fp8": INCLUDE / "tc_soft_fp8.h",
    "@tilecraft-soft-mx": INCLUDE / "tc_soft_mx.h",
}


@functools.cache
def header_text(path: Path) -> str:
    """`path`'s text with each line naming a shared file replaced by that file's text."""
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        shared = next((file for marker, file in SHARED_TEXTS.items() if marker in line), None)
        lines.append(shared.read_text() if shared is not None else line)
    return "".join(lines)
