"""Reading printed kernel-language text back into IR."""

from __future__ import annotations

from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.language.parser.source import register_text


def parse_script(text: str) -> PrimFunc | IRModule:
    """Parse text written by the printer (or by hand): one PrimFunc, or an IRModule for several."""
    file = register_text(text)
    namespace: dict = {"__name__": "tilecraft_script"}
    exec(compile(text, file, "exec"), namespace)  # noqa: S102 - text the caller asked us to parse
    funcs = [v for v in namespace.values() if isinstance(v, PrimFunc)]
    if len(funcs) == 1:
        return funcs[0]
    return IRModule(tuple(funcs))
