"""`T.prim_func`: parse a kernel function into a PrimFunc at decoration time."""

from __future__ import annotations

import sys

from tilecraft.ir.function import PrimFunc


def prim_func(func=None, *, private: bool = False, check_well_formed: bool = True):
    """Parse `func` into a PrimFunc (TileLang's `@T.prim_func`)."""
    from tilecraft.language.parser.core import parse_function

    # The decorating scope's locals: string annotations (`from __future__ import annotations`) of a
    # kernel made inside a factory function name them without a closure cell.
    outer_locals = dict(sys._getframe(1).f_locals)
    if func is None:
        return lambda f: parse_function(f, outer_locals=outer_locals)
    return parse_function(func, outer_locals=outer_locals)


__all__ = ["PrimFunc", "prim_func"]
