"""The system C compiler: discovery, version, OpenMP support, and compiling to a shared library."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tilecraft import settings
from tilecraft.errors import ToolchainError

CANDIDATES = ("gcc", "clang", "cc")
BASE_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11", "-fno-math-errno", "-fopenmp-simd")
INSTALL_HINT = (
    "install a C compiler (Debian/Ubuntu: `apt install gcc`; Fedora: `dnf install gcc`; macOS: "
    "`xcode-select --install`) or point TILECRAFT_CC or CC at one"
)


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str
    openmp: bool

    def flags(self, openmp: bool) -> tuple[str, ...]:
        return BASE_FLAGS + (("-fopenmp",) if openmp else ())


def _requested() -> str | None:
    return settings.get("TILECRAFT_CC") or os.environ.get("CC") or None


def find_compiler_path() -> str | None:
    """The compiler from TILECRAFT_CC or CC, else the first of gcc, clang, cc on PATH."""
    requested = _requested()
    if requested:
        return shutil.which(requested) or (requested if os.access(requested, os.X_OK) else None)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@functools.lru_cache(maxsize=8)
def _describe(path: str) -> Compiler:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"C compiler {path} does not run: {exc}; {INSTALL_HINT}") from None
    version = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else "unknown"
    return Compiler(path, version, _probe_openmp(path))


def _probe_openmp(path: str) -> bool:
    source = "#include <omp.h>\nint f(void) { return omp_get_max_threads(); }\n"
    with tempfile.TemporaryDirectory(prefix="tilecraft-omp-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(source)
        cmd = [path, "-fopenmp", "-fPIC", "-shared", str(src), "-o", str(Path(tmp) / "probe.so")]
        try:
            return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False


def compiler() -> Compiler:
    """The compiler to use; a clear error when there is none."""
    path = find_compiler_path()
    if path is None:
        requested = _requested()
        what = f"the requested C compiler {requested!r} was not found" if requested else "no C compiler found"
        raise ToolchainError(f"{what} (looked for {', '.join(CANDIDATES)} on PATH); {INSTALL_HINT}")
    return _describe(path)


def use_openmp(cc: Compiler) -> bool:
    """OpenMP threads when the compiler supports them, unless TILECRAFT_OPENMP turns them off."""
    wanted = settings.get("TILECRAFT_OPENMP")
    if wanted is False:
        return False
    if wanted is True and not cc.openmp:
        raise ToolchainError(
            f"TILECRAFT_OPENMP=1 but {cc.path} cannot build OpenMP code; install libgomp (gcc) or libomp "
            "(clang), or unset TILECRAFT_OPENMP"
        )
    return cc.openmp


def compile_shared(
    source: str, include_dirs: list[Path], openmp: bool, keep_dir: Path, extra_flags: tuple[str, ...] = ()
) -> bytes:
    """Compile `source` to a shared library and return its bytes.

    On failure the source stays in `keep_dir` and the error shows the command and the compiler output.
    """
    cc = compiler()
    keep_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tilecraft-cc-") as tmp:
        src = Path(tmp) / "kernel.c"
        out = Path(tmp) / "kernel.so"
        src.write_text(source)
        cmd = [cc.path, *cc.flags(openmp), *extra_flags, *(f"-I{d}" for d in include_dirs), str(src), "-o", str(out),
               "-lm"]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            kept = keep_dir / "kernel.c"
            kept.write_text(source)
            shown = " ".join(cmd).replace(str(src), str(kept))
            raise ToolchainError(
                f"the C compiler failed (exit {result.returncode})\n  command: {shown}\n"
                f"  generated source: {kept}\n{result.stderr.strip()}"
            )
        return out.read_bytes()


def compile_object(source: str) -> bytes:
    """Compile `source` to an object file (no linking) and return its bytes."""
    cc = compiler()
    with tempfile.TemporaryDirectory(prefix="tilecraft-cc-") as tmp:
        src = Path(tmp) / "kernel.c"
        out = Path(tmp) / "kernel.o"
        src.write_text(source)
        flags = [f for f in cc.flags(False) if f != "-shared"]
        cmd = [cc.path, *flags, "-c", str(src), "-o", str(out)]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            shown = " ".join(cmd)
            raise ToolchainError(f"the C compiler failed (exit {result.returncode})\n  command: {shown}\n"
                                 f"{result.stderr.strip()}")  # fmt: skip
        return out.read_bytes()
