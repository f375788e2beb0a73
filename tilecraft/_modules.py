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


def moved(module: str, name: str, home: str, why: str = "") -> ImportError:
    """The error for `module.name`, a name that module no longer exports and that lives in `home` now.

    An ImportError, so that `from module import name` shows this message rather than Python's own."""
    hint = f"; {why}" if why else ""
    fix = f"import it from there (`from {home} import {name}`)"
    return ImportError(f"{module}.{name} moved to {home}: {fix}{hint}", name=name)
