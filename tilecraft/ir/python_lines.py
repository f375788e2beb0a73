"""Indented lines of Python source, for the printers that write Python: the IR printer (kernel-language
text) and the CuTe DSL printer (a `@cute.kernel` function)."""

from __future__ import annotations

from typing import Any


class PythonLines:
    """Collects lines at the current indent; a subclass prints a statement with `stmt`."""

    def __init__(self, indent: int = 0) -> None:
        self.lines: list[str] = []
        self.indent = indent

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def block(self, s: Any | None) -> None:
        """`s` one level deeper; `pass` where it printed nothing (a Python block cannot be empty)."""
        self.indent += 1
        start = len(self.lines)
        if s is not None:
            self.stmt(s)
        if len(self.lines) == start:
            self.line("pass")
        self.indent -= 1

    def if_else(self, condition: str, then_case: Any, else_case: Any | None) -> None:
        """`if condition:` over `then_case`, and `else:` over `else_case` where there is one."""
        self.line(f"if {condition}:")
        self.block(then_case)
        if else_case is not None:
            self.line("else:")
            self.block(else_case)

    def stmt(self, s: Any) -> None:
        raise NotImplementedError
