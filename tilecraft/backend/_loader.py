"""Lazy import of the built-in backend packages named in `tilecraft._builtin`.

Nothing is imported when `tilecraft.backend` is; the first registry or target lookup calls
`ensure_builtin_backends()`. A backend package registers its target kinds and manifests when imported;
if its `backend.py` also offers `register()`, that is called again afterwards, so a package imported
earlier (while a test had the registry isolated) still ends up registered.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.RLock()
_loaded = False


def ensure_builtin_backends() -> None:
    """Import every built-in backend package once; a package that does not exist yet is skipped."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        # Set first: the packages call back into the registry while they import.
        _loaded = True
        try:
            from tilecraft._builtin import BUILTIN_BACKEND_PACKAGES

            for package in BUILTIN_BACKEND_PACKAGES:
                _import_backend_package(package)
        except BaseException:
            _loaded = False
            raise


def _import_backend_package(package: str) -> None:
    try:
        importlib.import_module(package)
    except ModuleNotFoundError as err:
        # Only the package itself may be missing (not written yet); a missing dependency inside it is
        # a real error and must surface.
        if err.name != package:
            raise
        return
    register = getattr(sys.modules.get(f"{package}.backend"), "register", None)
    if callable(register):
        register()


@contextmanager
def builtins_suspended() -> Iterator[None]:
    """Within the block, lookups do not import the built-in backends (for isolated test registries)."""
    global _loaded
    with _lock:
        saved = _loaded
        _loaded = True
    try:
        yield
    finally:
        with _lock:
            _loaded = saved
