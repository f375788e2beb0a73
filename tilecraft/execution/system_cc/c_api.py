"""What the C APIs of exported kernels share: C names for parameters, and the comment stating the
shapes a C caller must pass (tilecraft/execution/cc/export_c.py, tilecraft/execution/cuda_driver/
export_c.py)."""

from __future__ import annotations

import re

from tilecraft.codegen.reserved import C_RESERVED
from tilecraft.runtime.artifact import CompiledArtifact

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
# The loaders' own names (their globals, parameters and the locals of the launch functions): a
# parameter of one of these names would shadow them or be shadowed.
_LOADER_NAMES = frozenset(["stream", "entry", "message", "library", "last_error", "functions", "symbols",
                           "dynamic_smem", "params", "rc", "gx", "gy", "gz"])  # fmt: skip


def c_name(name: str) -> str:
    """`name` as a C identifier: a trailing underscore where it is not one, or C or its library reserves it
    (codegen/reserved.py: `NULL`, `errno`, `int32_t`, `printf` ...), or the loader uses it."""
    cleaned = re.sub(r"\W", "_", name)
    if not _IDENTIFIER.fullmatch(cleaned) or cleaned in C_RESERVED or cleaned in _LOADER_NAMES:
        return cleaned + "_"
    return cleaned


def shapes_comment(artifact: CompiledArtifact) -> str:
    lines = []
    for p in artifact.params:
        if p.kind == "buffer":
            dims = ", ".join(str(d) for d in p.shape)
            lines.append(f" *   {p.name}: ({dims}) {p.dtype}{', written' if p.written else ''}")
        else:
            lines.append(f" *   {p.name}: {p.dtype} scalar")
    lines += [f" *   {v.name}: the symbolic dim {v.name} ({v.dtype}), consistent with the shapes"
              for v in artifact.symbolic_dims]  # fmt: skip
    return "\n".join(lines)
