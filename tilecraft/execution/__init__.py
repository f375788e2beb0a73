"""Shared execution backends: Build -> Load -> Launch of a `CompiledArtifact`, the content-addressed
kernel cache, and the base (`CachedExecutionBackend`) of execution backends that build through it.

The protocol every execution backend implements, its spec and the registry of specs live in the core
(`tilecraft/backend/execution.py`, `tilecraft/backend/execution_registry.py`); they are re-exported here.
What a build and a load make (`Built`, `Loaded`) are runtime types, in `tilecraft.runtime`.
Concrete execution backends each live in their own package `tilecraft/execution/<name>/` whose
`backend.py` holds the spec and the implementation; nothing here names one.
"""

from tilecraft._modules import moved as _moved
from tilecraft.backend.execution import Availability, ExecutionBackend, ExecutionBackendSpec
from tilecraft.backend.execution_registry import (
    get_spec,
    implementation,
    register_execution_backend,
    registered_execution_backends,
    reset_availability,
    unregister_execution_backend,
)
from tilecraft.execution.base import CachedExecutionBackend

__all__ = [
    "Availability", "CacheEntry", "CachedExecutionBackend", "ExecutionBackend", "ExecutionBackendSpec",
    "KernelCache", "cache_key", "get_spec", "implementation", "register_execution_backend",
    "registered_execution_backends", "reset_availability", "unregister_execution_backend",
]  # fmt: skip

_LAZY = {"CacheEntry", "KernelCache", "cache_key"}
_MOVED = dict.fromkeys(("BenchmarkDevice", "Built", "FastPath", "Loaded"), "tilecraft.runtime")


def __getattr__(name: str):
    # The cache pulls in tempfile/shutil; keep `import tilecraft.execution` light.
    if name in _LAZY:
        from tilecraft.execution import cache

        return getattr(cache, name)
    if name in _MOVED:
        raise _moved(__name__, name, _MOVED[name], "they are runtime types")
    raise AttributeError(f"module 'tilecraft.execution' has no attribute {name!r}")
