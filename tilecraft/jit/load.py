"""`tilecraft.load(path)`: a Kernel from a directory `Kernel.export` wrote, without a compiler."""

from __future__ import annotations

from pathlib import Path

from tilecraft.backend.context import create_backend_context
from tilecraft.execution.base import export_info
from tilecraft.jit.kernel import Kernel


def load(path: str | Path) -> Kernel:
    """The exported kernel at `path`, loaded by the execution backend that built it, with the `out_idx`
    it was exported with; nothing is compiled (the export's checksums are verified first)."""
    info = export_info(path)
    name = info["execution_backend"]
    from tilecraft.backend.execution_registry import get_spec, implementation

    backend = implementation(get_spec(name))
    built = backend.import_built(path)
    ctx = create_backend_context(built.artifact.target, None, name, require_available=False)
    return Kernel(backend.load(built), ctx, tuple(info.get("out_idx", ())))
