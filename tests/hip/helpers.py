"""Compiling generated HIP and reading what clang made of it: the disassembly and the code object's
metadata notes, through the LLVM tools beside the clang in use (llvm-objdump-19 next to clang-19)."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import tilecraft

MFMA = re.compile(r"\bv_mfma_\w+")


def llvm_tool(clang: str, tool: str) -> str | None:
    """`llvm-<tool>` of clang's version (clang-19 -> llvm-objdump-19), else the unversioned one."""
    suffix = re.search(r"-(\d+)$", Path(clang).name)
    names = ([f"llvm-{tool}-{suffix.group(1)}"] if suffix else []) + [f"llvm-{tool}"]
    return next((found for name in names if (found := shutil.which(name))), None)


def lowered(func, arch: str):
    """The artifact of `func` for `hip -arch=<arch>`, with the code object clang compiled in codegen."""
    return tilecraft.lower(func, target=f"hip -arch={arch}", execution_backend="hip")


def _run(tool: str, args: list[str], binary: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="tilecraft-hip-test-") as tmp:
        path = Path(tmp) / "kernel.hsaco"
        path.write_bytes(binary)
        return subprocess.run([tool, *args, str(path)], capture_output=True, text=True, check=True).stdout


def disassembly(objdump: str, binary: bytes, arch: str) -> str:
    return _run(objdump, ["-d", f"--mcpu={arch}"], binary)


def notes(readelf: str, binary: bytes) -> str:
    return _run(readelf, ["--notes"], binary)
