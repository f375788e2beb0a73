"""`T.prim_func`: parse a kernel function into a PrimFunc at decoration time."""

from __future__ import annotations

from tilecraft.ir.function import PrimFunc


def prim_func(func=None, *, private: bool = False, check_well_formed: bool = True):
    """Parse `func` into a PrimFunc (TileLang's `@T.prim_func`)."""
    if func is None:
        return lambda f: prim_func(f, private=private, check_well_formed=check_well_formed)
    from tilecraft.language.parser.core import parse_function

    return parse_function(func)


__all__ = ["PrimFunc", "prim_func"]
