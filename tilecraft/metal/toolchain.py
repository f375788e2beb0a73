"""Apple's offline Metal compiler, where Xcode installs it (macOS): `xcrun -sdk macosx metal` compiles
MSL to AIR and `xcrun -sdk macosx metallib` links a `.metallib`. The device codegen's compile step uses
it, so `tilecraft backend check metal` compiles every conformance kernel on a Mac with Xcode; elsewhere
there is no Metal compiler at all and the step raises ToolchainNotFound (the check then skips, and CI's
C++17 type-check against tests/metal/shim stands in for it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tilecraft.errors import ToolchainError, ToolchainNotFound

XCRUN = "xcrun"
FIX = (
    "install Xcode (or its command-line tools with the Metal toolchain) on macOS; Linux has no Metal compiler"
)


def find_metal_compiler() -> str:
    """The xcrun executable, when it finds the Metal compiler; ToolchainNotFound saying why not."""
    if sys.platform != "darwin":
        raise ToolchainNotFound(f"no Metal compiler exists for {sys.platform} ({FIX})")
    xcrun = shutil.which(XCRUN)
    if xcrun is None:
        raise ToolchainNotFound(f"xcrun is not on PATH ({FIX})")
    found = subprocess.run([xcrun, "-sdk", "macosx", "--find", "metal"], capture_output=True, text=True)
    if found.returncode != 0:
        raise ToolchainNotFound(f"xcrun cannot find the metal compiler: {found.stderr.strip()} ({FIX})")
    return xcrun


def compile_metallib(source: str, fast_math: bool, flags: tuple[str, ...] = ()) -> bytes:
    """The `.metallib` of `source`; ToolchainError with the compiler's log when it rejects the source."""
    xcrun = find_metal_compiler()
    math = "-ffast-math" if fast_math else "-fno-fast-math"
    with tempfile.TemporaryDirectory(prefix="tilecraft-metal-") as tmp:
        src, air, lib = (Path(tmp) / name for name in ("kernel.metal", "kernel.air", "kernel.metallib"))
        src.write_text(source)
        steps = (
            [xcrun, "-sdk", "macosx", "metal", math, *flags, "-c", str(src), "-o", str(air)],
            [xcrun, "-sdk", "macosx", "metallib", str(air), "-o", str(lib)],
        )
        for step in steps:
            run = subprocess.run(step, capture_output=True, text=True)
            if run.returncode != 0:
                raise ToolchainError(f"{' '.join(step[3:5])} failed:\n{run.stderr.strip()}")
        return lib.read_bytes()
