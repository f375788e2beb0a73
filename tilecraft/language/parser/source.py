"""Locating a kernel's source: text, file, line and column offsets, and its AST."""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import threading
from dataclasses import dataclass

from tilecraft.errors import ParseError
from tilecraft.ir.span import Span

# CPython's AST constructor counts its recursion per interpreter, not per thread: two threads in
# ast.parse at once fail with "SystemError: AST constructor recursion depth mismatch" when a garbage
# collection inside one lets the other run. Reentrant: a finalizer may parse on the same thread.
_AST_LOCK = threading.RLock()


def parse_python(text: str) -> ast.Module:
    """`ast.parse(text)`, one thread at a time."""
    with _AST_LOCK:
        return ast.parse(text)


@dataclass(frozen=True)
class Source:
    """A function's source with the offsets that map AST positions back to the file."""

    file: str
    line_offset: int
    col_offset: int
    tree: ast.FunctionDef

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", 0) + self.col_offset
        end_col = getattr(node, "end_col_offset", None)
        same_line = getattr(node, "end_lineno", None) == getattr(node, "lineno", None)
        return Span(
            self.file, line, col, end_col + self.col_offset if end_col is not None and same_line else None
        )


def function_source(func) -> Source:
    """The source of `func` (a plain function), parsed; the file may be a registered in-memory text."""
    try:
        lines, first_line = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise ParseError(
            f"cannot read the source of {getattr(func, '__qualname__', func)!r}: {exc}",
            hint="kernels must be defined in a file (or given as text to T.parse_script); "
            "the interactive prompt keeps no source",
        ) from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = _indent_removed(text, dedented)
    tree = parse_python(dedented)
    funcs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if not funcs:
        raise ParseError(f"no function definition found in the source of {func.__qualname__}")
    file = inspect.getsourcefile(func) or func.__code__.co_filename
    return Source(file, first_line - 1, indent, funcs[0])


def _indent_removed(text: str, dedented: str) -> int:
    first = next((line for line in text.splitlines() if line.strip()), "")
    first_dedented = next((line for line in dedented.splitlines() if line.strip()), "")
    return len(first) - len(first_dedented)


_counter = [0]


def register_text(text: str, name: str = "tilecraft-script") -> str:
    """Make `text` readable by linecache (and so by inspect) under a synthetic file name."""
    _counter[0] += 1
    file = f"<{name}-{_counter[0]}>"
    linecache.cache[file] = (len(text), None, text.splitlines(keepends=True), file)
    return file
