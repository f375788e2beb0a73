"""TileLang's `tilelang.engine.callback` for CUDA: rewrite the generated CUDA source before it compiles.

`register_cuda_postproc(func)` makes every CUDA kernel lowered afterwards in this process pass its device
source through `func(code, target) -> code` before NVRTC or nvcc sees it (backend/postproc.py applies
it and puts the function in the cache key). One function at a time, as in TileLang.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilecraft.backend.postproc import SourcePostproc, register_source_postproc, unregister_source_postproc
from tilecraft.cuda.codegen import SOURCE_FORMAT


def register_cuda_postproc(func: SourcePostproc, override: bool = True) -> None:
    """Rewrite every generated CUDA source with `func(code, target)` (a str in, a str out)."""
    register_source_postproc(SOURCE_FORMAT, func, override)


def unregister_cuda_postproc() -> None:
    """Stop rewriting CUDA sources (tilecraft's addition: TileLang has no way to undo a registration)."""
    unregister_source_postproc(SOURCE_FORMAT)


def register_cuda_postproc_callback(func: Callable | bool | None = None, override: bool = True) -> Any:
    """Decorator form: `@register_cuda_postproc_callback`, `@...()` or `@...(override=False)`."""
    if callable(func):
        register_cuda_postproc(func, override)
        return func
    chosen = func if isinstance(func, bool) else override

    def register(fn: SourcePostproc) -> SourcePostproc:
        register_cuda_postproc(fn, chosen)
        return fn

    return register
