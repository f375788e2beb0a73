"""`set_autotune_inputs`: tune on the caller's own inputs instead of generated ones (TileLang's API).

with set_autotune_inputs(a, b):
    kernel = matmul(1024, 1024, 1024)    # tunes, measuring every candidate on a and b
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_state = threading.local()


@contextmanager
def set_autotune_inputs(*args: Any) -> Iterator[None]:
    """Within the block, tunings started by this thread measure candidates on `args` (the kernel's
    inputs, in order; one list or tuple is taken as the inputs too)."""
    inputs = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    stack = _stack()
    stack.append(inputs)
    try:
        yield
    finally:
        stack.pop()


def get_autotune_inputs() -> list[Any] | None:
    """The inputs of the innermost `set_autotune_inputs` block of this thread, or None."""
    stack = _stack()
    return stack[-1] if stack else None


def _stack() -> list[list[Any]]:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack
