"""Where a failed CUDA compile leaves the source it was given, so the error can name a file to open."""

from __future__ import annotations

import tempfile
from pathlib import Path

SOURCE_NAME = "kernel.cu"


def keep_source(source: str, keep_dir: Path | None, prefix: str) -> Path:
    """Write `source` where the user can open it after a failed compile; returns the file's path."""
    directory = Path(keep_dir) if keep_dir is not None else Path(tempfile.mkdtemp(prefix=prefix))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SOURCE_NAME
    path.write_text(source)
    return path
