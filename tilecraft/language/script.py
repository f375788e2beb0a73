"""Reading printed kernel-language text back into IR."""

from __future__ import annotations

import linecache

from tilecraft.errors import ParseError
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.span import Span
from tilecraft.language.parser.source import register_text


def parse_script(text: str, path: str | None = None) -> PrimFunc | IRModule:
    """Parse text written by the printer (or by hand): one PrimFunc, or an IRModule for several.

    `path` names the file the text came from, for the `file:line:col` of errors (and the spans of the IR).
    """
    file = register_text(text) if path is None else _register_file(text, path)
    namespace: dict = {"__name__": "tilecraft_script"}
    try:
        code = compile(text, file, "exec")
    except SyntaxError as err:
        span = Span(file, err.lineno or 1, max((err.offset or 1) - 1, 0))
        raise ParseError(f"invalid syntax: {err.msg}", span) from None
    exec(code, namespace)  # noqa: S102 - text the caller asked us to parse
    funcs = [v for v in namespace.values() if isinstance(v, PrimFunc)]
    if len(funcs) == 1:
        return funcs[0]
    return IRModule(tuple(funcs))


def _register_file(text: str, path: str) -> str:
    linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    return path
