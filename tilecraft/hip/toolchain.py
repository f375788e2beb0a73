"""clang as the HIP device compiler: where it is, its version, and compiling one translation unit to a
code object for one AMD arch. No ROCm is needed: the generated source includes nothing and is compiled
with -nogpuinc -nogpulib; clang needs its AMDGPU target and lld (Debian: clang-19 lld-19).

clang is `TILECRAFT_HIP_CLANG` when set (never silently replaced by another), else the first of
clang-19, clang-18, clang-17 on PATH.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tilecraft import settings
from tilecraft.errors import ToolchainError, ToolchainNotFound

CANDIDATES = ("clang-19", "clang-18", "clang-17")
INSTALL_HINT = (
    "install clang with its AMDGPU target and lld, 17 or newer (Debian/Ubuntu: apt-get install clang-19 lld-19 "
    "llvm-19), or point TILECRAFT_HIP_CLANG at such a clang"
)
BASE_FLAGS = ("-x", "hip", "--offload-device-only", "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc", "-O3",
              "-std=c++17")  # fmt: skip
# Fast math as TileLang asks for it (tl.enable_fast_math): reassociation, approximate math, no NaN checks.
FAST_MATH_FLAGS = ("-ffast-math",)
SOURCE_NAME = "kernel.hip"


def _check_clang(path: Path) -> None:
    if not (path.is_file() or shutil.which(str(path))):
        raise ValueError(f"{path} is not a file; point TILECRAFT_HIP_CLANG at a clang executable")


CLANG_SETTING = settings.declare(
    settings.Setting(
        "TILECRAFT_HIP_CLANG", Path, None,
        "clang that compiles HIP device code for AMD GPUs (17 or newer, with lld); default: clang-19, clang-18 "
        "or clang-17 on PATH", check=_check_clang,
    )
)  # fmt: skip


def find_clang() -> str | None:
    """TILECRAFT_HIP_CLANG, else clang-19/18/17 on PATH; None when there is none (or the setting is unusable)."""
    configured = settings.get("TILECRAFT_HIP_CLANG", check=False)
    if configured is not None:
        found = shutil.which(str(configured))
        return found if found is not None or not Path(configured).is_file() else str(configured)
    for name in CANDIDATES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def clang_path() -> str:
    """The clang to use; ToolchainNotFound saying where it looked and how to install one."""
    path = find_clang()
    if path is None:
        configured = settings.get("TILECRAFT_HIP_CLANG", check=False)
        where = (
            f"TILECRAFT_HIP_CLANG={configured} is not usable"
            if configured
            else (f"none of {', '.join(CANDIDATES)} is on PATH")
        )
        raise ToolchainNotFound(f"no clang for HIP device code: {where}; {INSTALL_HINT}")
    return path


@functools.lru_cache(maxsize=8)
def clang_version(path: str | None = None) -> str:
    """clang's version line, e.g. "Debian clang version 19.1.7 (3~deb12u1)" (part of cache keys)."""
    clang = path or clang_path()
    try:
        out = subprocess.run([clang, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ToolchainError(f"clang at {clang} does not run: {err}; {INSTALL_HINT}") from None
    return (out.stdout.strip().splitlines() or ["unknown"])[0]


def requested_flags(fast_math: bool, flags: Sequence[str] = ()) -> tuple[str, ...]:
    """The clang flags for what the user asked: fast math, then their own flags (a later flag wins)."""
    return (*(FAST_MATH_FLAGS if fast_math else ()), *flags)


def clang_command(clang: str, arch: str, options: Sequence[str], source: Path, output: Path) -> list[str]:
    """`clang -x hip --offload-arch=<arch> --offload-device-only ... -nogpulib -nogpuinc -O3 <options>`."""
    return [
        clang,
        *BASE_FLAGS[:2],
        f"--offload-arch={arch}",
        *BASE_FLAGS[2:],
        *options,
        str(source),
        "-o",
        str(output),
    ]


def compile_code_object(
    source: str, arch: str, options: Sequence[str] = (), *, keep_dir: Path | None = None
) -> bytes:
    """Compile one HIP translation unit to a code object (hsaco) for `arch` (gfx90a, gfx942, ...).

    On failure the source is written to `keep_dir` (a new temporary directory when None) and the
    ToolchainError shows the command line, that path and clang's output."""
    clang = clang_path()
    with tempfile.TemporaryDirectory(prefix="tilecraft-hip-") as tmp:
        src, out = Path(tmp) / SOURCE_NAME, Path(tmp) / "kernel.hsaco"
        src.write_text(source)
        cmd = clang_command(clang, arch, options, src, out)
        try:
            result = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as err:
            raise ToolchainError(f"clang at {clang} does not run: {err}; {INSTALL_HINT}") from None
        if result.returncode != 0 or not out.is_file():
            raise _failure(result, cmd, source, src, arch, keep_dir)
        return out.read_bytes()


def _failure(
    result, cmd: list[str], source: str, src: Path, arch: str, keep_dir: Path | None
) -> ToolchainError:
    directory = Path(keep_dir) if keep_dir is not None else Path(tempfile.mkdtemp(prefix="tilecraft-hip-"))
    directory.mkdir(parents=True, exist_ok=True)
    kept = directory / SOURCE_NAME
    kept.write_text(source)
    shown = " ".join(cmd).replace(str(src.parent), str(directory))
    output = (
        (result.stderr.strip() + "\n" + result.stdout.strip())
        .strip()
        .replace(str(src.parent), str(directory))
    )
    hint = ""
    if "invalid target ID" in output or "unknown target CPU" in output:
        hint = f"\n  {clang_version(cmd[0])} does not know {arch}; use a newer clang (gfx950 needs clang 20)"
    elif "ld.lld" in output and ("not found" in output or "No such file" in output):
        hint = f"\n  clang needs lld to link the code object; {INSTALL_HINT}"
    return ToolchainError(
        f"clang failed (exit {result.returncode}) compiling HIP for {arch}\n  command: {shown}\n"
        f"  generated source: {kept}{hint}\n{output}".rstrip()
    )
