"""Device headers: a backend's header text with the shared helper files inserted where it names them,
and the shared texts a module's kernels need on top of it (`used_texts`: tc_rng.h for the kernels that
draw random numbers, whose generators are too large to put in every source).

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


RNG = INCLUDE / "tc_rng.h"
FNUZ = INCLUDE / "tc_soft_fnuz.h"


def used_texts(mod) -> list[str]:
    """The shared helper texts the kernels of `mod` call beyond their backend's header, to follow it:
    tc_rng.h where a kernel draws, tc_soft_fnuz.h where one reads, writes or converts an FNUZ float8."""
    from tilecraft.ir.buffer import Buffer
    from tilecraft.ir.dtype import FNUZ_FLOAT8
    from tilecraft.ir.expr import Call, Expr
    from tilecraft.ir.op import RNG_CALLS
    from tilecraft.ir.visitor import walk

    nodes = [n for f in mod.functions for n in walk(f.body)]
    draws = any(isinstance(n, Call) and n.op in RNG_CALLS for n in nodes)
    fnuz = any(isinstance(n, (Expr, Buffer)) and n.dtype.name in FNUZ_FLOAT8 for n in nodes)
    return [*([RNG.read_text()] if draws else []), *([FNUZ.read_text()] if fnuz else [])]


@functools.cache
def header_text(path: Path) -> str:
    """`path`'s text with each line naming a shared file replaced by that file's text."""
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        shared = next((file for marker, file in SHARED_TEXTS.items() if marker in line), None)
        lines.append(shared.read_text() if shared is not None else line)
    return "".join(lines)
