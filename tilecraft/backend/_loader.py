"""Discovery of backend plugins through entry points, loaded lazily on the first registry lookup.

Two entry-point groups (`importlib.metadata`), each entry named after the object it points at:

    tilecraft.backends             NAME = "package.module:MANIFEST"   a BackendModule
    tilecraft.execution_backends   NAME = "package.module:SPEC"       an ExecutionBackendSpec

tilecraft's own backends are entry points of the `tilecraft` distribution, declared in pyproject.toml
like any plugin's. A checkout used without `pip install` has no metadata to read them from: only then
(the installed `tilecraft` distribution declares nothing in a group, or none is installed) does the
copy in `tilecraft/_builtin.py` stand in for them; a test keeps the two equal.

Nothing loads when `tilecraft` or `tilecraft.backend` is imported; the first registry or target lookup
calls `ensure_backends()`. Loading an entry point imports its module (a backend package registers its
target kinds and manifest as it is imported) and registers the object it names, which is harmless when
the import already did, and registers a spec no manifest names. Execution-backend entry points load
first. A package imported while a test had the registry isolated registered into that registry and is
not registered again: its import has run.

A plugin that fails (its import raises, it names an object of the wrong type or under another name, it
was written for another plugin API, its registration conflicts) does not take the others down: the
failure is a `PluginProblem` naming the entry point, its distribution and the fix, warned once
(`PluginWarning`) and listed by `plugin_problems()` for `tilecraft backends` and `tilecraft doctor`.

Thread safety: no lock of ours is held across the imports. Python's per-module import locks already
make a thread wait while another thread imports the same package, so every caller returns only once
each package is fully imported (and so registered). A lock held across the imports could deadlock
against those module locks (a thread importing a backend package holds its module lock); for the same
reason `register_backend` loads nothing when the manifest's kinds are registered already. A lookup made
by a backend package's own import (this thread is inside that import) loads the other plugins but leaves
the loading unfinished, so the next lookup checks again once the import is done.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import tilecraft._origin  # noqa: F401 - says so when a folder named tilecraft hides this package

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

BACKENDS = "tilecraft.backends"
EXECUTION_BACKENDS = "tilecraft.execution_backends"
GROUPS = (EXECUTION_BACKENDS, BACKENDS)  # in load order
DISTRIBUTION = "tilecraft"
CHECKOUT = "this tilecraft checkout (tilecraft/_builtin.py: no installed metadata)"

_lock = threading.RLock()
_loaded = False
_this_thread = threading.local()  # `.loading`: this thread is inside ensure_backends
_problems: dict[tuple[str, str], PluginProblem] = {}
_warned: set[tuple[str, str, str]] = set()
_sources: dict[tuple[str, str], str] = {}  # (group, name) -> the entry point's value, for loaded plugins


@dataclass(frozen=True)
class PluginProblem:
    """An entry point that could not be loaded: what it is, where it comes from, what failed, the fix."""

    group: str
    name: str
    value: str
    distribution: str
    problem: str
    fix: str

    def describe(self) -> str:
        return (
            f"plugin {self.name!r} (entry point {self.name} = {self.value} in group {self.group}, from "
            f"{self.distribution}) was not loaded: {self.problem}; fix: {self.fix}"
        )


def ensure_backends() -> None:
    """Load every entry point of both groups once (safe to call from several threads at once).

    Returns only when every plugin is loaded, or recorded as a problem. Called back by a package this
    thread is importing, it returns at once: that package's own import is still running and finishes
    its registration.
    """
    global _loaded
    if _loaded or getattr(_this_thread, "loading", False):
        return
    _this_thread.loading = True
    try:
        importlib.import_module("tilecraft.backend.shared_compiler")  # before any plugin: see that module
        complete = [_load(entry_point) for entry_point in discovered_entry_points()]
    finally:
        _this_thread.loading = False
    # Marked only when no package was left half-imported (by an import further up this thread's
    # stack); otherwise the next lookup checks again.
    if all(complete):
        with _lock:
            _loaded = True


def discovered_entry_points() -> list[EntryPoint]:
    """Every entry point of both groups, in load order: tilecraft's own first, then by distribution and
    name; the same (group, name, value) listed twice (one distribution seen twice on the path) once."""
    found: list[EntryPoint] = []
    for group in GROUPS:
        listed = _installed_entry_points(group)
        own = [ep for ep in listed if _distribution_name(ep) == DISTRIBUTION]
        if not own:
            own = _builtin_entry_points(group)
        others = sorted(
            (ep for ep in listed if _distribution_name(ep) != DISTRIBUTION),
            key=lambda ep: (_distribution_name(ep), ep.name),
        )
        seen: set[tuple[str, str]] = set()
        for ep in [*own, *others]:
            if (ep.name, ep.value) not in seen:
                seen.add((ep.name, ep.value))
                found.append(ep)
    return found


def _installed_entry_points(group: str) -> list[EntryPoint]:
    from importlib.metadata import entry_points

    return list(entry_points(group=group))


def _builtin_entry_points(group: str) -> list[EntryPoint]:
    from importlib.metadata import EntryPoint

    from tilecraft._builtin import BUILTIN_ENTRY_POINTS

    pairs = (line.split("=", 1) for line in BUILTIN_ENTRY_POINTS.get(group, ()))
    return [EntryPoint(name.strip(), value.strip(), group) for name, value in pairs]


def _distribution_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    name = dist.metadata["Name"] if dist is not None else None
    return (name or "").lower().replace("_", "-")


def _distribution(ep: EntryPoint) -> str:
    """The distribution an entry point comes from, in words (name and version)."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return CHECKOUT
    return f"distribution {dist.metadata['Name']} {dist.version}"


def _load(ep: EntryPoint) -> bool:
    """Load and register one entry point; False when its package is still being imported by this thread."""
    for name in _module_and_parents(ep.module):
        try:
            module = importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - any failure of a plugin's import is that plugin's problem
            _record(
                ep, f"importing {name} raised {type(err).__name__}: {_one_line(err)}", _import_fix(ep, err)
            )
            return True
        if _still_importing(module):
            return False
    try:
        obj = ep.load()
    except Exception as err:  # noqa: BLE001
        _record(ep, f"{ep.value} cannot be read: {type(err).__name__}: {_one_line(err)}", _name_fix(ep))
        return True
    _register(ep, obj)
    return True


def _module_and_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _still_importing(module: ModuleType) -> bool:
    # importlib marks a module's spec `_initializing` while its code runs; import_module returns such a
    # module only to the thread that is importing it (other threads wait for the import to finish).
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _register(ep: EntryPoint, obj: object) -> None:
    from tilecraft.backend.execution import ExecutionBackendSpec
    from tilecraft.backend.module import BackendModule

    expected = BackendModule if ep.group == BACKENDS else ExecutionBackendSpec
    if not isinstance(obj, expected):
        _record(ep, f"{ep.value} is a {type(obj).__name__}, not a {expected.__name__}", _name_fix(ep))
        return
    if obj.name != ep.name:
        _record(
            ep,
            f"the entry point is named {ep.name!r} but the {expected.__name__} it names is {obj.name!r}",
            f"name the entry point after it: {obj.name} = {ep.value}",
        )
        return
    try:
        _register_object(ep, obj)
    except Exception as err:  # noqa: BLE001 - a conflicting plugin must not stop the others
        _record(ep, f"registering it failed: {_one_line(err)}", _conflict_fix(ep, err))
        return
    with _lock:
        _problems.pop((ep.group, ep.name), None)
        _sources[(ep.group, ep.name)] = ep.value


def _register_object(ep: EntryPoint, obj) -> None:
    from tilecraft.backend.api import api_version_problem
    from tilecraft.backend.errors import PluginAPIError
    from tilecraft.backend.execution_registry import register_execution_backend
    from tilecraft.backend.registry import register_backend

    if ep.group == BACKENDS:
        register_backend(obj)
        return
    problem = api_version_problem(f"execution backend {obj.name!r}", obj.api_version)
    if problem:
        raise PluginAPIError(problem)
    register_execution_backend(obj)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _uninstall(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"pip uninstall {dist.metadata['Name']}" if dist is not None else "remove the entry"


def _import_fix(ep: EntryPoint, err: BaseException) -> str:
    from tilecraft.backend.errors import PluginAPIError

    if isinstance(err, PluginAPIError):
        return f"install a version of the plugin written for this tilecraft, or {_uninstall(ep)}"
    missing = getattr(err, "name", None) if isinstance(err, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] == ep.module.split(".")[0]:
        return (
            f"module {missing} does not exist: reinstall the plugin (pip install -e <its folder>) so its "
            f"metadata matches its files, or {_uninstall(ep)}"
        )
    if missing:
        return f"install what it needs ({missing.split('.')[0]}), or {_uninstall(ep)}"
    return f"fix the plugin (run `python -c 'import {ep.module}'` to see the traceback), or {_uninstall(ep)}"


def _name_fix(ep: EntryPoint) -> str:
    kind = "BackendModule (the manifest)" if ep.group == BACKENDS else "ExecutionBackendSpec"
    return f"point the entry point at the module-level {kind} object, as `{ep.name} = package.module:NAME`"


def _conflict_fix(ep: EntryPoint, err: BaseException) -> str:
    from tilecraft.backend.errors import PluginAPIError

    if isinstance(err, PluginAPIError):
        return f"install a version of the plugin written for this tilecraft, or {_uninstall(ep)}"
    return f"fix the plugin's manifest, or keep one of two conflicting plugins ({_uninstall(ep)})"


def _record(ep: EntryPoint, problem: str, fix: str) -> None:
    found = PluginProblem(ep.group, ep.name, ep.value, _distribution(ep), problem, fix)
    with _lock:
        _problems[(ep.group, ep.name)] = found
        key = (ep.group, ep.name, problem)
        first = key not in _warned
        _warned.add(key)
    if first:
        from tilecraft.errors import PluginWarning

        warnings.warn(found.describe(), PluginWarning, stacklevel=2)


def plugin_problems() -> tuple[PluginProblem, ...]:
    """Every plugin that failed to load, by group and name (loads the plugins first)."""
    ensure_backends()
    with _lock:
        return tuple(_problems[key] for key in sorted(_problems))


def plugin_source(group: str, name: str) -> str | None:
    """The entry-point value ("module:attr") a loaded plugin came from, or None (loads the plugins)."""
    ensure_backends()
    with _lock:
        return _sources.get((group, name))


def rediscover() -> None:
    """Forget what was loaded, so the next lookup reads the entry points again (tests, after an install).
    Plugins already registered stay registered."""
    global _loaded
    with _lock:
        _loaded = False
        _problems.clear()
        _warned.clear()
        _sources.clear()


@contextmanager
def plugins_suspended() -> Iterator[None]:
    """Within the block, lookups load no plugins (for isolated test registries)."""
    global _loaded
    with _lock:
        saved = _loaded
        _loaded = True
    try:
        yield
    finally:
        with _lock:
            _loaded = saved
