"""A progress bar on stderr for tuning (tqdm's when installed), and the verbose detail lines.

The bar is drawn only on a terminal: redrawn lines would clutter a log file or CI output. Detail lines
(TILECRAFT_VERBOSE=1, or verbose=True in the compile options) are printed wherever stderr goes.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from typing import Any, TextIO

_WIDTH = 24


class Progress:
    """`update(note)` once per finished item; `close()` at the end (also as a context manager)."""

    def __init__(
        self, total: int, label: str, stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self._start = time.perf_counter()
        self._tqdm = _tqdm(total, label, self.stream) if self.enabled else None

    def update(self, note: str = "") -> None:
        self.done += 1
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(note, refresh=False)
            self._tqdm.update(1)
        elif self.enabled:
            self._draw(note)

    def _draw(self, note: str) -> None:
        filled = _WIDTH * self.done // max(1, self.total)
        bar = "#" * filled + "." * (_WIDTH - filled)
        elapsed = time.perf_counter() - self._start
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {elapsed:.0f}s {note[:40]:<40}")
        self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _tqdm(total: int, label: str, stream: TextIO) -> Any:
    if importlib.util.find_spec("tqdm") is None:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=label, file=stream, leave=True)


def say(text: str, stream: TextIO | None = None) -> None:
    """A detail line: `[tilecraft] autotune ...` on stderr."""
    out = stream if stream is not None else sys.stderr
    out.write(f"[tilecraft] {text}\n")
    out.flush()
