"""Shared execution backends: Build -> Load -> Launch of a `CompiledArtifact`, the registry of their
specs, and the content-addressed kernel cache.

Concrete execution backends each live in their own package `tilecraft/execution/<name>/` whose
`backend.py` holds the spec and the implementation; nothing here names one.
"""

from tilecraft.execution.base import Availability, Built, ExecutionBackend, ExecutionBackendSpec, Loaded
from tilecraft.execution.registry import (
    get_spec,
    implementation,
    register_execution_backend,
    registered_execution_backends,
    reset_availability,
    unregister_execution_backend,
)

__all__ = [
    "Availability", "Built", "CacheEntry", "ExecutionBackend", "ExecutionBackendSpec", "KernelCache",
    "Loaded", "cache_key", "get_spec", "implementation", "register_execution_backend",
    "registered_execution_backends", "reset_availability", "unregister_execution_backend",
]  # fmt: skip

_LAZY = {"CacheEntry", "KernelCache", "cache_key"}


def __getattr__(name: str):
    # The cache pulls in tempfile/shutil; keep `import tilecraft.execution` (and tilecraft.backend) light.
    if name in _LAZY:
        from tilecraft.execution import cache

        return getattr(cache, name)
    raise AttributeError(f"module 'tilecraft.execution' has no attribute {name!r}")
