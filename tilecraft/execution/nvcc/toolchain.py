"""The CUDA toolkit's `nvcc`: its version, and compiling one translation unit to a cubin (where nvcc is
found: cuda_driver/toolkit.py).

`compile_cubin` is what the CUDA target's compile step calls when the selected execution backend
compiles eagerly; it needs no GPU and no driver.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tilecraft.errors import ToolchainError, ToolchainNotFound
from tilecraft.execution.cuda_driver import toolkit
from tilecraft.execution.cuda_driver.sources import SOURCE_NAME, keep_source

BASE_FLAGS = ("-cubin", "-O3", "-std=c++17", "-lineinfo")
# Fast math as TileLang asks nvcc for it (tl.enable_fast_math): approximate division, sqrt and
# transcendentals, denormals flushed; NaN and infinity still behave.
FAST_MATH_FLAGS = ("--use_fast_math",)
_RELEASE = re.compile(r"release (\d+\.\d+), V([\d.]+)")


def nvcc_path() -> str:
    """The nvcc to use; ToolchainNotFound saying where it looked and how to install one."""
    path = toolkit.find_nvcc()
    if path is None:
        raise ToolchainNotFound(f"{toolkit.missing_reason()}; {toolkit.INSTALL_HINT}")
    return path


@functools.lru_cache(maxsize=8)
def nvcc_version(path: str | None = None) -> str:
    """nvcc's full version, e.g. "13.0.88" (part of cache keys)."""
    nvcc = path or nvcc_path()
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ToolchainError(f"nvcc at {nvcc} does not run: {err}; {toolkit.INSTALL_HINT}") from None
    match = _RELEASE.search(out.stdout)
    return match.group(2) if match else (out.stdout.strip().splitlines() or ["unknown"])[-1]


def requested_flags(fast_math: bool, flags: Sequence[str] = ()) -> tuple[str, ...]:
    """The nvcc flags for what the user asked: fast math, then their own flags (a later flag wins)."""
    return (*(FAST_MATH_FLAGS if fast_math else ()), *flags)


def nvcc_command(nvcc: str, arch: str, options: Sequence[str], source: Path, output: Path) -> list[str]:
    """`nvcc -cubin -arch=<arch> -O3 -std=c++17 -lineinfo <options> -o <output> <source>`."""
    return [nvcc, *BASE_FLAGS[:1], f"-arch={arch}", *BASE_FLAGS[1:], *options, "-o", str(output), str(source)]


def compile_cubin(
    source: str, arch: str, options: Sequence[str] = (), *, keep_dir: Path | None = None
) -> bytes:
    """Compile one CUDA C++ translation unit to a cubin for `arch` (`sm_XY` or `sm_XYa`).

    `options` are extra nvcc flags (e.g. `--use_fast_math`). On failure the source is written to
    `keep_dir` (a new temporary directory when None) and the ToolchainError shows the command line,
    that path and nvcc's output.
    """
    nvcc = nvcc_path()
    with tempfile.TemporaryDirectory(prefix="tilecraft-nvcc-") as tmp:
        src = Path(tmp) / SOURCE_NAME
        out = Path(tmp) / "kernel.cubin"
        src.write_text(source)
        cmd = nvcc_command(nvcc, arch, options, src, out)
        try:
            result = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as err:
            raise ToolchainError(f"nvcc at {nvcc} does not run: {err}; {toolkit.INSTALL_HINT}") from None
        if result.returncode != 0:
            raise _failure(f"nvcc failed (exit {result.returncode})", source, cmd, src, result, keep_dir)
        if not out.is_file():
            raise _failure(f"nvcc exited 0 but wrote no {out.name}", source, cmd, src, result, keep_dir)
        return out.read_bytes()


def _failure(what: str, source: str, cmd: list[str], src: Path, result: subprocess.CompletedProcess,
             keep_dir: Path | None) -> ToolchainError:  # fmt: skip
    kept, note = _keep(source, keep_dir)
    # Show the command and messages as if nvcc had run in the directory that is kept.
    moved = str(kept.parent) if kept is not None else str(src.parent)
    shown = " ".join(cmd).replace(str(src.parent), moved)
    output = (result.stderr.strip() + "\n" + result.stdout.strip()).strip().replace(str(src.parent), moved)
    where = f"{kept}{note}" if kept is not None else f"not kept{note}"
    return ToolchainError(f"{what}\n  command: {shown}\n  generated source: {where}\n{output}".rstrip())


def _keep(source: str, keep_dir: Path | None) -> tuple[Path | None, str]:
    """The kept source (in `keep_dir`, else a new temporary directory) and a note on what could not be
    written: an unwritable cache must not hide nvcc's messages."""
    problems: list[str] = []
    for directory in dict.fromkeys((keep_dir, None)):
        try:
            kept = keep_source(source, directory, "tilecraft-nvcc-")
        except OSError as err:
            problems.append(str(err))
            continue
        return kept, (f" (could not write {keep_dir}: {problems[0]})" if problems else "")
    return None, f" (could not be written: {'; '.join(problems)})"
