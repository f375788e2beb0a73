"""What the C APIs of exported kernels share: C names for parameters, and the comment stating the
shapes a C caller must pass (tilecraft/execution/cc/export_c.py, tilecraft/execution/cuda_driver/
export_c.py)."""

from __future__ import annotations

import re

from tilecraft.backend.artifact import CompiledArtifact

_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = frozenset(["auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "stream"])


def c_name(name: str) -> str:
    """`name` as a C identifier (a trailing underscore where it is not one, or is a keyword)."""
    cleaned = re.sub(r"\W", "_", name)
    return cleaned + "_" if not _IDENTIFIER.fullmatch(cleaned) or cleaned in _KEYWORDS else cleaned


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
