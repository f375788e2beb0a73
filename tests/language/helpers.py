"""Assertions shared by the language and IR tests: printer round trips and located kernel errors."""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path

import tilecraft
from tilecraft.errors import KernelError
from tilecraft.ir import IRModule, PrimFunc, structural_equal, walk
from tilecraft.ir.printer import print_ir
from tilecraft.language import parse_script

ERROR_MARKER = "# <- error"

# tilecraft frames a located error may still pass through: the entry points the user called.
ENTRY_FRAMES = {"prim_func", "parse_function", "check_semantics", "<lambda>"}
# The package's own directory, resolved: a frame is tilecraft's when its file lies under it. Not a
# substring of the path, which also matches the tests of a checkout whose folder is named tilecraft.
PACKAGE_DIR = Path(tilecraft.__file__).resolve().parent


def assert_roundtrip(node: PrimFunc | IRModule) -> str:
    """Print `node`, parse the text back, and require an equal IR that prints to the identical text."""
    text = print_ir(node)
    again = parse_script(text)
    if isinstance(node, IRModule) and isinstance(again, PrimFunc):
        again = IRModule((again,), node.attrs)
    assert structural_equal(node, again), f"re-parsed IR differs from the original:\n{text}"
    assert print_ir(again) == text, f"printing the re-parsed IR changed the text:\n{text}"
    return text


def node_types(node) -> set[str]:
    """Class names of every node under `node` (PrimFunc or IRModule), buffers' shapes excluded."""
    funcs = node.functions if isinstance(node, IRModule) else (node,)
    return {type(n).__name__ for f in funcs for n in walk(f.body)}


def in_package(filename: str) -> bool:
    """Whether a traceback frame's file is part of the tilecraft package (not a test, not a script)."""
    return Path(filename).resolve().is_relative_to(PACKAGE_DIR)


def marker_line(fn, marker: str = ERROR_MARKER) -> int:
    """The file line of the one line in `fn`'s source that carries `marker`."""
    lines, first = inspect.getsourcelines(fn)
    hits = [first + k for k, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, f"{fn.__name__} must mark exactly one line with {marker!r}, found {len(hits)}"
    return hits[0]


def assert_located(err: KernelError, fn, marker: str = ERROR_MARKER) -> str:
    """`err` points at the marked line of `fn`: `file:line:col`, the source line and a caret."""
    line = marker_line(fn, marker)
    assert err.span is not None, f"error without a location: {err}"
    assert err.span.line == line, f"error at line {err.span.line}, expected {line}:\n{err}"
    text = str(err)
    assert f"{err.span.file}:{line}:{err.span.col + 1}: " in text
    assert err.span.file == inspect.getsourcefile(fn)
    source_line = inspect.getsourcelines(fn)[0][line - inspect.getsourcelines(fn)[1]].rstrip("\n")
    assert source_line in text, text
    caret_line = text.splitlines()[text.splitlines().index("    " + source_line) + 1]
    assert caret_line.strip().startswith("^") and caret_line.index("^") == 4 + err.span.col, text
    frames = {f.name for f in traceback.extract_tb(err.__traceback__) if in_package(f.filename)}
    assert frames <= ENTRY_FRAMES, f"internal frames in the traceback: {frames - ENTRY_FRAMES}"
    assert err.__cause__ is None
    return text
