"""Lazy import of the built-in backend packages named in `tilecraft._builtin`.

Nothing is imported when `tilecraft.backend` is; the first registry or target lookup calls
`ensure_builtin_backends()`. A backend package registers its target kinds and manifests when imported;
if its `backend.py` also offers `register()`, that is called again afterwards, so a package imported
earlier (while a test had the registry isolated) still ends up registered.

Thread safety: no lock of ours is held across the imports. Python's per-module import locks already
make a thread wait while another thread imports the same package, so every caller returns only once
each package is fully imported (and so registered). A lock held across the imports could deadlock
against those module locks (a thread importing a backend package holds its module lock); for the same
reason `register_backend` loads nothing when the manifest's kinds are registered already.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import tilecraft._origin  # noqa: F401 - says so when a folder named tilecraft hides this package

_lock = threading.RLock()
_loaded = False
_this_thread = threading.local()  # `.loading`: this thread is inside ensure_builtin_backends


def ensure_builtin_backends() -> None:
    """Import every built-in backend package once; a package that does not exist yet is skipped.

    Returns only when every package is imported and registered (safe to call from several threads at
    once). Called back by a package this thread is importing, it returns at once: that package's own
    import is still running and finishes the registration.
    """
    global _loaded
    if _loaded or getattr(_this_thread, "loading", False):
        return
    from tilecraft._builtin import BUILTIN_BACKEND_PACKAGES

    _this_thread.loading = True
    try:
        complete = [_import_backend_package(package) for package in BUILTIN_BACKEND_PACKAGES]
    finally:
        _this_thread.loading = False
    # Marked only when no package was left half-imported (by an import further up this thread's
    # stack); otherwise the next lookup checks again.
    if all(complete):
        with _lock:
            _loaded = True


def _import_backend_package(package: str) -> bool:
    """Import `package` and call its `backend.register()`; False when the import is still running."""
    try:
        module = importlib.import_module(package)
    except ModuleNotFoundError as err:
        # Only the package itself may be missing (not written yet); a missing dependency inside it is
        # a real error and must surface.
        if err.name != package:
            raise
        return True
    if _still_importing(module):
        return False
    register = getattr(sys.modules.get(f"{package}.backend"), "register", None)
    if callable(register):
        register()
    return True


def _still_importing(module: ModuleType) -> bool:
    # importlib marks a module's spec `_initializing` while its code runs; import_module returns such a
    # module only to the thread that is importing it (other threads wait for the import to finish).
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


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
