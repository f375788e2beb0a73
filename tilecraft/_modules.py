"""Optional modules, looked up safely while other threads may be importing them."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def imported(name: str) -> ModuleType | None:
    """`name` if it is fully imported, else None; never imports anything.

    A module enters `sys.modules` before its body runs, so while another thread imports torch a plain
    `sys.modules.get("torch")` returns a half-built module (without the submodules it has yet to import).
    """
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def optional(name: str) -> ModuleType | None:
    """`name`, imported if needed (waiting for an import another thread has begun); None if absent."""
    module = imported(name)
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
