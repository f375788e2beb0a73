"""Source locations that tie IR nodes back to the user's kernel."""

from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A position in the user's source: 1-based line, 0-based column."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def source_line(self) -> str:
        return linecache.getline(self.file, self.line).rstrip("\n")

    def excerpt(self) -> str:
        """The source line with a caret under the column, or '' when the source is not available."""
        text = self.source_line()
        if not text:
            return ""
        width = 1
        if self.end_col is not None and self.end_col > self.col:
            width = self.end_col - self.col
        return f"    {text}\n    {' ' * self.col}{'^' * width}"
