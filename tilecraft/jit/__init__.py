"""Compile and JIT entry points, the Kernel object and array interop.

`jit` and `compile` are thin front doors so `import tilecraft` stays light; the compiler loads on the
first call (see tilecraft/jit/api.py for the full signatures).
"""

from __future__ import annotations

from typing import Any

from tilecraft.errors import TilecraftError


def jit(func=None, **options: Any):
    """`@tilecraft.jit` / `@tilecraft.jit(out_idx=..., target=..., ...)`: see tilecraft.jit.api.jit."""
    from tilecraft.jit.api import jit as _jit

    return _jit(func, **options)


def compile(func, *args: Any, **options: Any):  # noqa: A001 - TileLang's name
    """`tilecraft.compile(func, out_idx=None, target="auto", ...)`: see tilecraft.jit.api.compile."""
    from tilecraft.jit.api import compile as _compile

    try:
        return _compile(func, *args, **options)
    except TilecraftError as err:
        # Said on purpose: the traceback ends at the caller's line (see JITFunction.__call__).
        raise err.with_traceback(None)  # noqa: B904 - the error says what went wrong; no internal frames
