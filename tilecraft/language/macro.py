"""`T.macro`: a helper whose body is inlined into the kernel that calls it."""

from __future__ import annotations

import functools
import inspect


class Macro:
    """A function parsed into the caller's kernel at each call; `return value` gives the call's value."""

    def __init__(self, func) -> None:
        self.func = func
        self.signature = inspect.signature(func)
        functools.update_wrapper(self, func)
        self._source = None

    @property
    def source(self):
        from tilecraft.language.parser.source import function_source

        if self._source is None:
            self._source = function_source(self.func)
        return self._source

    def __call__(self, *args, **kwargs):
        from tilecraft.errors import TilecraftError
        from tilecraft.ir.expr import IRError
        from tilecraft.language import builder

        name = self.func.__name__
        if builder.active() is not None:  # a plain Python function the kernel calls called it, while parsing
            raise IRError(f"macro {name} is called from a plain Python function, which runs while parsing; a "
                          "macro expands only where the parser reads its call (decorate the calling function "
                          "with @T.macro too)")  # fmt: skip
        raise TilecraftError(f"macro {name} can only be called inside a @T.prim_func kernel")


def macro(func=None, **_options):
    """Decorate a helper to inline its body where a kernel calls it."""
    if func is None:
        return lambda f: Macro(f)
    return Macro(func)
