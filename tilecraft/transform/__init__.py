"""Backend-neutral passes: the frontend boundary check and shared building blocks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tilecraft.transform.pass_config import PassConfigKey


def simplify_prim_func(factory: Callable[..., Any]) -> Callable[..., Any]:
    """TileLang's decorator: the @T.prim_func that `factory` returns, with its index arithmetic
    simplified (the `simplify` pass every pipeline runs, applied ahead of time)."""

    @functools.wraps(factory)
    def simplified(*args: Any, **kwargs: Any) -> Any:
        from tilecraft.ir.function import PrimFunc
        from tilecraft.transform.simplify import simplify_func

        func = factory(*args, **kwargs)
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"simplify_prim_func: {getattr(factory, '__name__', factory)!r} returned "
                f"{type(func).__name__}; it must return a @T.prim_func"
            )
        return simplify_func(func)

    return simplified


__all__ = ["PassConfigKey", "simplify_prim_func"]
