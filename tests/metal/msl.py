"""Type-checking generated MSL as C++17 against the metal_stdlib shim (shim/metal_stdlib says what the
shim does and does not catch).

MSL attributes (`[[buffer(0)]]`, `[[threadgroup(0)]]`, `[[max_total_threads_per_threadgroup(n)]]`) are
removed before compiling: some name an address-space keyword the shim defines away, which would leave
`[[(0)]]`. Many kernels are checked in one translation unit, each library in a namespace of its own (the
shim and the device header are included once, their guards keep later inclusions out), so the
compiler starts once per target instead of once per kernel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SHIM_DIR = Path(__file__).resolve().parent / "shim"
ATTRIBUTE = re.compile(r"\[\[[^\[\]]*\]\]")
COMPILERS = ("clang++-19", "clang++-18", "clang++-17", "clang++", "g++")
FLAGS = ("-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused-function", "-Wno-unused-variable",
         "-Wno-unused-but-set-variable", "-Wno-unknown-pragmas", "-Werror=return-type")  # fmt: skip


def find_compiler() -> str | None:
    """TILECRAFT_MSL_CXX, else the first of COMPILERS on PATH."""
    explicit = os.environ.get("TILECRAFT_MSL_CXX")
    if explicit:
        return explicit
    return next((c for c in COMPILERS if shutil.which(c)), None)


def as_cxx(source: str) -> str:
    """The MSL source without its attributes."""
    return ATTRIBUTE.sub("", source)


@dataclass(frozen=True)
class Unit:
    """One translation unit of many libraries; `starts[k]` is the line where library k begins."""

    text: str
    names: tuple[str, ...]
    starts: tuple[int, ...]

    def owner(self, line: int) -> str:
        owner = "(the shim)"
        for name, start in zip(self.names, self.starts):
            if line >= start:
                owner = name
        return owner


def unit(sources: dict[str, str]) -> Unit:
    lines = ["#include <metal_stdlib>"]
    names, starts = [], []
    for k, (name, source) in enumerate(sources.items()):
        names.append(name)
        starts.append(len(lines) + 1)
        lines.append(f"namespace tc_library_{k} {{  // {name}")
        lines.extend(as_cxx(source).splitlines())
        lines.append(f"}}  // namespace tc_library_{k}")
    return Unit("\n".join(lines) + "\n", tuple(names), tuple(starts))


def typecheck(sources: dict[str, str], compiler: str) -> dict[str, list[str]]:
    """The compiler's errors by library name (empty when every library type-checks)."""
    tu = unit(sources)
    with tempfile.TemporaryDirectory(prefix="tc-msl-") as tmp:
        path = Path(tmp) / "libraries.cc"
        path.write_text(tu.text)
        run = subprocess.run([compiler, *FLAGS, "-I", str(SHIM_DIR), "-x", "c++", str(path)],
                             capture_output=True, text=True)  # fmt: skip
    errors: dict[str, list[str]] = {}
    for line in run.stderr.splitlines():
        found = re.match(rf"{re.escape(str(path))}:(\d+):\d+: (error|warning)", line)
        if found:
            errors.setdefault(tu.owner(int(found.group(1))), []).append(line.split(": ", 1)[1])
    if run.returncode != 0 and not errors:
        errors["(compiler)"] = [run.stderr.strip() or f"exit status {run.returncode}"]
    return errors
