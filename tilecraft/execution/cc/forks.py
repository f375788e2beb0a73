"""Kernels in a forked child run their blocks on the calling thread.

GCC's OpenMP runtime does not survive fork(): its worker threads stay in the parent, and a parallel
region in the child waits for them forever. A kernel library loaded before the fork learns of it from
its own `pthread_atfork` handler (tilecraft/cpu/include/tc_cpu.h); one loaded in the child after
`os.fork()` is told here, when it is loaded. The policy and its reasons: docs/reliability.md ("fork").
"""

from __future__ import annotations

import os
from typing import Any

_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def in_forked_child() -> bool:
    """Whether this process was forked (by os.fork) from a process that imported tilecraft's `cc`."""
    return _forked


def single_threaded_after_fork(library: Any, function_name: str) -> None:
    """Switch a library loaded in a forked child to running its blocks on the calling thread (a library
    built before this switch existed, an older export, has no `<function>_after_fork` and is left
    as it is)."""
    if not _forked:
        return
    switch = getattr(library, f"{function_name}_after_fork", None)
    if switch is not None:
        switch.argtypes = []
        switch.restype = None
        switch()
